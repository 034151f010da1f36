// Device check, training options and data for the executor commands.
#include "executor_setup.hpp"

#include <memory>

#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/exec/cuda_probe.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {

void add_concurrent_timing_option(CLI::App& command, std::string& timing) {
  command
      .add_option("--concurrent-timing", timing,
                  "tables for 2 or more processors (cpu and cuda): time the layers where a pipeline of that many runs them "
                  "(pipeline: a 1f1b run, each layer on its processor; a network with too few layers falls back to "
                  "copies) or as that many copies of a one-processor run at once (copies: shared caches and memory "
                  "bandwidth only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"pipeline", "copies"}));
}

void add_unmarked_twins_option(CLI::App& command, ExecutorOptions& options) {
  command
      .add_option("--unmarked-twins", options.unmarked_twins,
                  "profiling: which tables make every timed run again without its layers' marks and fit what a task "
                  "costs beyond its layers from that twin's task times (the layers' times stay the marked run's): "
                  "auto (a GPU's one-processor table: there the marks, events around each layer's parts, are host "
                  "calls that validation runs do not make, docs/cuda-executor.md), all, or none. Those tables take "
                  "about twice as long to time")
      ->expected(0, 1)
      ->default_str("all")  // the option alone
      ->option_text("{auto,all,none}=auto (alone: all)")
      ->check(CLI::IsMember({"auto", "all", "none"}));
}

CLI::Validator number_or_auto(const std::function<bool(double)>& in_range, const std::string& wanted) {
  return CLI::Validator(
      [in_range, wanted](std::string& text) {
        if (text == "auto") return std::string();
        try {
          std::size_t used = 0;
          const double value = std::stod(text, &used);
          if (used == text.size() && in_range(value)) return std::string();
        } catch (const std::exception&) {
        }
        return wanted + ", or auto; got '" + text + "'";
      },
      "");
}

void add_executor_options(CLI::App& command, ExecutorOptions& options, bool with_training) {
  command.add_option("--device", options.device, "executor: cpu (threads as processors; oneDNN and Eigen kernels) or cuda (GPUs)")
      ->capture_default_str();
  command.add_option("--placement", options.cuda.placement,
                     "cuda: processors as SM partitions of one GPU (partitions, CUDA green contexts), one GPU each "
                     "(gpus), or plain streams on one GPU without SM isolation (streams)")
      ->capture_default_str()
      ->check(CLI::IsMember({"partitions", "gpus", "streams"}));
  command.add_option("--partition-sms", options.cuda.partition_sms,
                     "cuda, partitions: SMs per processor (0: the largest equal share; an H100 has 132)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command.add_option("--gpu", options.cuda.device, "cuda, partitions or streams: which GPU")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--tf32", options.cuda.tf32, "cuda: TF32 tensor-core GEMMs (default: fp32)");
  command.add_option("--gpu-wait", options.cuda.wait,
                     "cuda: how a host thread waits for its stream: spin (holds its CPU, the quickest wake; faster "
                     "even with more threads than CPUs, docs/cuda-executor.md) or block (sleeps until the driver "
                     "wakes it)")
      ->capture_default_str()
      ->check(CLI::IsMember({"spin", "block"}));
  command.add_flag("--pin-threads", options.pin_threads,
                   "pin processor p's thread to the p-th CPU this process may run on (in turn, when there are more "
                   "processors), and each link's thread to its sender's CPU; a CPU profile pins its copies likewise. "
                   "Default: the OS places the threads");
  command.add_option("--data", options.data,
                     "training data: fashion-mnist, idx (an IDX folder laid out as Fashion-MNIST's, any image "
                     "size, given by --data-dir), synthetic, or auto (Fashion-MNIST for networks taking 28x28 "
                     "images, synthetic otherwise)")
      ->capture_default_str();
  command.add_option("--data-dir", options.data_dir, "folder with the Fashion-MNIST (or --data idx) IDX files (.gz or not)")
      ->capture_default_str();
  command.add_option("--handoff-spin-us", options.handoff_spin,
                     "microseconds a processor's or link's thread spins for its next task's inputs before it sleeps "
                     "(0: sleep at once), or auto: " +
                         std::to_string(static_cast<int>(kHandoffSpinWhereEveryCoreHasAThread_s * 1e6)) +
                         " where a CPU run has a processor for every CPU, two or more, and no link has a thread of its own "
                         "(no thread then competes for a core), 0 otherwise and on GPUs. A CPU profile times its handoff "
                         "with the spin of the runs its table is for (docs/executor.md, \"Handoffs\")")
      ->capture_default_str()
      ->check(number_or_auto([](double us) { return us >= 0 && us <= 1e6; }, "microseconds from 0 to 1000000"));
  if (!with_training) return;
  command.add_option("--rank-link", options.cuda.rank_link,
                     "cuda, --distributed: how tensors travel between ranks: nccl (GPU to GPU; every rank needs a "
                     "GPU of its own), mpi (through host memory; ranks may share a GPU), or auto (nccl where every "
                     "rank has its own GPU and libnccl.so.2 loads, mpi otherwise)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  command.add_option("--lr", options.learning_rate, "SGD learning rate")->capture_default_str();
  command.add_option("--momentum", options.momentum, "SGD momentum (0: plain SGD)")->capture_default_str();
  command.add_option("--seed", options.seed, "seed of the initial weights")->capture_default_str();
  command.add_option("--transfer-threads", options.transfer_threads,
                     "cpu: which threads copy the transfers between processors: senders (the sending processor's "
                     "thread, right after the task whose output it copies), links (a thread per link), or auto "
                     "(senders where the run has a processor for every CPU, as the cost model assumes there; links "
                     "otherwise)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "links", "senders"}));
}

void check_device(const std::string& device) {
  if (device == "cpu") return;
  if (device != "cuda") throw Error("--device must be cpu or cuda, got '" + device + "'");
  try {
    cuda::load_cuda_plugin();  // the build's problem first: is there a CUDA executor at all?
  } catch (const Error& e) {
    throw Error(std::string("--device cuda: ") + e.what());
  }
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) throw Error("--device cuda: no CUDA device: " + probe.reason);
}

Runner executor_runner(const ExecutorOptions& options, std::string* placement) {
  if (options.device == "cpu") {
    if (placement != nullptr) {
      const std::string links = options.transfer_threads == "links"     ? "and per link"
                                : options.transfer_threads == "senders" ? "copying their transfers themselves"
                                                                        : "and per link where some CPU has no processor";
      *placement = "CPU threads (" + cpu::kernel_libraries() + ", fp32), one per processor " + links;
    }
    return cpu::run_cpu;
  }
  const cuda::CudaOptions cuda_options = options.cuda;
  const cuda::PluginEntryPoints* plugin = cuda::load_cuda_plugin().entry_points;
  // `placement` says where the run with the most processors ran (validate's runs come in a
  // shuffled order, and its header names the largest P's placement).
  auto most_processors = std::make_shared<std::size_t>(0);
  return [plugin, cuda_options, placement, most_processors](const TaskGraph& graph, const Network& network,
                                                            const BatchSampler& data, const TrainingOptions& training) {
    const bool largest = graph.processors.size() >= *most_processors;
    if (largest) *most_processors = graph.processors.size();
    return plugin->run(graph, network, data, training, cuda_options, largest ? placement : nullptr);
  };
}

void default_hardware_for_device(const ExecutorOptions& options, std::string& hardware) {
  if (options.device == "cuda" && hardware == "cpu-core") hardware = "h100";
}

std::unique_ptr<Dataset> load_data(const ExecutorOptions& options, const Network& network, const std::string& split) {
  try {
    return std::make_unique<Dataset>(load_dataset_for(options.data, options.data_dir, network, split));
  } catch (const Error& e) {
    const std::string text = e.what();
    throw Error(text.rfind("data", 0) == 0 ? "--" + text : text);  // name the option
  }
}

double handoff_spin_s(const ExecutorOptions& options) {
  return options.handoff_spin == "auto" ? kAutomaticHandoffSpin : std::stod(options.handoff_spin) * 1e-6;
}

std::vector<int> pinned_cpus(const ExecutorOptions& options) {
  return options.pin_threads ? cpus_to_pin() : std::vector<int>{};
}

TrainingOptions training_options(const ExecutorOptions& options) {
  TrainingOptions training;
  training.pin_cpus = pinned_cpus(options);
  training.learning_rate = options.learning_rate;
  training.momentum = options.momentum;
  training.seed = options.seed;
  training.handoff_spin_s = handoff_spin_s(options);
  training.transfer_threads = parse_transfer_threads(options.transfer_threads);
  check_training_options(training);  // before any data is loaded
  return training;
}

}  // namespace pipetwin::cli
