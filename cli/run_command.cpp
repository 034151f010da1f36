// `pipetwin run --device cpu|cuda`: trains a network under a schedule on CPU threads or GPUs and
// reports the measured result in the simulator's schema (table or --json), the loss per minibatch, test
// accuracy on request, and a Chrome trace of the measured run beside its prediction. With
// --distributed (under mpirun or srun) each MPI rank runs its processors' tasks and rank 0 reports.
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <unistd.h>

#include <fmt/format.h>

#include "commands.hpp"
#include "executor_setup.hpp"
#include "graph_options.hpp"
#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/views.hpp"
#include "pipetwin/sim/engines.hpp"
#include "rank_followers.hpp"
#include "table.hpp"
#include "output_option.hpp"

#include <nlohmann/json.hpp>

namespace pipetwin::cli {
namespace {

struct RunOptions {
  GraphOptions graph;
  ExecutorOptions executor;
  double epochs = 0;
  const CLI::Option* epochs_given = nullptr;
  bool test = false;
  bool json = false;
  bool quiet = false;
  std::string trace_file;
  std::string weights_file;
  bool distributed = false;
  double message_timeout_s = 60;
  const CLI::Option* procs_given = nullptr;
};

// The line rank 0 writes when the MPI launcher ends it (another rank failed or was killed; the
// other ranks end silently, so that the job says it once). A signal handler may only write what
// was made before, so the line is made when the run starts: the one process-wide buffer this
// program keeps, written once before the handler is installed.
char stop_line[128];
std::size_t stop_line_size = 0;

extern "C" void stopped_by_launcher(int signal_number) {
  if (stop_line_size > 0) {
    const ssize_t written = ::write(STDERR_FILENO, stop_line, stop_line_size);
    static_cast<void>(written);
  }
  std::_Exit(128 + signal_number);
}

void install_stop_line(std::int32_t rank) {
  const std::string line = "pipetwin: rank " + std::to_string(rank) +
                           ": ended by the MPI launcher (another rank failed, was killed or was interrupted)\n";
  stop_line_size = rank == 0 ? std::min(line.size(), sizeof(stop_line)) : 0;
  std::memcpy(stop_line, line.data(), stop_line_size);
  std::signal(SIGTERM, stopped_by_launcher);
}

void run(RunOptions& options, mpi::MpiSession* session) {
  check_device(options.executor.device);
  const bool quiet = options.quiet || (session != nullptr && session->rank() != 0);  // rank 0 reports
  GraphConfig config = options.graph.config;
  default_hardware_for_device(options.executor, config.hardware);
  if (session != nullptr && options.procs_given->count() == 0) {
    config.processors = session->ranks();  // one processor per rank unless --procs says otherwise
  } else {
    const auto counts = parse_procs(options.graph.procs);
    if (counts.size() != 1) throw Error("run: give one processor count in --procs");
    config.processors = counts.front();
  }
  if (session != nullptr && session->ranks() > config.processors) {
    throw Error("--distributed: " + std::to_string(session->ranks()) + " ranks for " + std::to_string(config.processors) +
                " processors; give each rank at least one (--procs, or fewer ranks in mpirun -np)");
  }
  const ScheduleRequest request = make_request(config);
  check_executor_network(request.network);
  const auto data = load_data(options.executor, request.network, "train");
  if (options.epochs_given->count() > 0) {
    if (!(options.epochs > 0) || !std::isfinite(options.epochs)) {
      throw Error("--epochs must be a positive number of passes over the data, got " + short_number(options.epochs));
    }
    const double steps = options.epochs * static_cast<double>(data->size()) / static_cast<double>(request.network.batch);
    if (!(steps < 1e6)) {
      throw Error("--epochs " + short_number(options.epochs) + " is " + short_number(steps) +
                  " minibatches of " + std::to_string(request.network.batch) + " samples; at most 1e6");
    }
    config.minibatches = std::max(1, static_cast<int>(steps));
  }
  const TaskGraph graph = make_graph(config);
  validate_or_throw(graph);
  if (session != nullptr && graph.schedule_metrics.count("solve_nodes") && graph.schedule_metrics.at("solve_nodes") == 0) {
    throw Error("--distributed with scheduler=exact: every rank schedules the graph itself, so give solve_nodes=N "
                "(a node limit gives every rank the same schedule; a time limit may not)");
  }
  std::unique_ptr<Dataset> test_data;
  if (options.test) test_data = load_data(options.executor, request.network, "test");
  const BatchSampler sampler = graph_sampler(*data, graph, request.network, options.executor.seed);
  TrainingOptions training = training_options(options.executor);
  training.record_memory_timeline = !options.trace_file.empty();
  Distribution distribution;
  if (session != nullptr) {
    distribution.transport = &session->transport();
    distribution.message_timeout_s = checked_message_timeout_s(options.message_timeout_s);
    training.distribution = &distribution;
  }
  const int report_every = std::max(1, config.minibatches / 10);
  if (!quiet) {
    std::cerr << fmt::format("training {} on {} ({} samples) under {} on {} processor{} ({}{}): {} minibatches\n",
                             graph.model, data->name, data->size(), graph.schedule, graph.processor_count(),
                             graph.processor_count() == 1 ? "" : "s",
                             options.executor.device,
                             session != nullptr ? fmt::format(", {} MPI ranks", session->ranks()) : "",
                             config.minibatches);
  }
  if (!options.quiet) {  // from the rank whose processor computes the loss
    training.on_minibatch = [&](std::int32_t done) {
      if (done % report_every == 0 || done == config.minibatches) {
        std::cerr << fmt::format("  minibatch {}/{}\n", done, config.minibatches);
      }
    };
  }
  std::string placement;
  const Runner runner = executor_runner(options.executor, &placement);
  std::optional<TrainingRun> ran;
  if (session == nullptr) {
    ran = runner(graph, request.network, sampler, training);
  } else {  // a rank's failure ends the whole job, with one line naming the rank
    try {
      install_stop_line(session->rank());
      ran = runner(graph, request.network, sampler, training);
    } catch (const std::exception& e) {
      end_job(*session, e);
    }
    if (session->rank() != 0) return;
    placement = fmt::format("{} MPI ranks of {}", session->ranks(), placement);
  }
  const TrainingRun& trained = *ran;
  cpu::Accuracy accuracy;
  if (test_data) accuracy = cpu::evaluate_accuracy(request.network, trained.final_weights, *test_data);

  if (!options.trace_file.empty()) {  // the measured run over the prediction of the same graph
    EngineOptions predicting;
    predicting.record_memory_timeline = true;
    const Result predicted = run_engine(default_engine(), graph, predicting);
    TraceRanks ranks;  // across processes: one process per rank in the trace
    if (session != nullptr) {
      const auto processors = static_cast<std::int32_t>(graph.processors.size());
      for (std::int32_t p = 0; p < processors; ++p) ranks.rank_of_processor.push_back(rank_of_processor(p, processors, session->ranks()));
      for (const auto& link : graph.links) ranks.rank_of_link.push_back(rank_of_link(link, processors, session->ranks()));
    }
    write_output_file(options.trace_file, chrome_trace_json(graph, {&trained.result, &predicted}, ranks));
    std::cerr << "wrote a Chrome trace of the measured run and the " << predicted.engine << " prediction to "
              << options.trace_file << "\n";
  }
  if (!options.weights_file.empty()) {  // per layer: its name and its parameters (W | bias | gamma | beta)
    nlohmann::json layers = nlohmann::json::array();
    for (std::size_t l = 0; l < trained.final_weights.size(); ++l) {
      const HostWeights& w = trained.final_weights[l];
      layers.push_back({{"name", request.network.layers[l].name}, {"weights", std::vector<float>(w.data(), w.data() + w.size())}});
    }
    write_output_file(options.weights_file, nlohmann::json{{"model", graph.model}, {"layers", layers}}.dump() + "\n");
  }
  const Result& r = trained.result;
  if (options.json) {
    auto j = result_to_json(graph, r, false);
    j["device"] = options.executor.device;
    j["placement"] = placement;
    j["data"] = data->name;
    j["learning_rate"] = options.executor.learning_rate;
    j["momentum"] = options.executor.momentum;
    j["minibatch_loss"] = trained.minibatch_loss;
    if (!trained.device_pool_peak_bytes.empty()) {
      auto pools = nlohmann::json::object();
      for (const auto& [gpu, bytes] : trained.device_pool_peak_bytes) pools[std::to_string(gpu)] = bytes;
      j["device_pool_peak_bytes"] = pools;
    }
    if (trained.host_tensors_reused + trained.host_tensors_allocated > 0) {
      j["host_tensors"] = {{"reused", trained.host_tensors_reused}, {"allocated", trained.host_tensors_allocated}};
    }
    if (test_data) {
      j["test_loss"] = accuracy.loss;
      j["test_accuracy"] = accuracy.accuracy;
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} · {} · {} processors: {} · {} microbatches x {} samples · {} minibatches · measured\n",
                           graph.model, graph.schedule, graph.processor_count(), placement, graph.microbatches,
                           graph.samples_per_microbatch, graph.minibatches);
  Table table({"P", "total_s", "step_s", "mean_util", "bubble", "peak_memory", "host_peak", "first_loss", "last_loss"});
  std::int64_t peak = 0;
  for (const auto bytes : r.peak_memory_bytes) peak = std::max(peak, bytes);
  table.add_row({std::to_string(graph.processor_count()), fmt::format("{:.4g}", r.total_s),
                 fmt::format("{:.4g}", r.iteration_s), fmt::format("{:.3f}", r.mean_utilization),
                 fmt::format("{:.1f}%", 100 * r.bubble_fraction), human_bytes(peak), human_bytes(r.host_peak_memory_bytes),
                 fmt::format("{:.4f}", trained.minibatch_loss.front()), fmt::format("{:.4f}", trained.minibatch_loss.back())});
  table.print(std::cout);
  for (const auto& [gpu, bytes] : trained.device_pool_peak_bytes) {
    std::cout << fmt::format("GPU {}: the memory pool held at most {} (graph buffers, caches and convolution workspaces)\n", gpu,
                             human_bytes(bytes));
  }
  if (trained.host_tensors_reused + trained.host_tensors_allocated > 0) {
    std::cout << fmt::format("tensors: {} made in buffers earlier tensors gave back, {} allocated (the processors' pools)\n",
                             trained.host_tensors_reused, trained.host_tensors_allocated);
  }
  if (test_data) {
    std::cout << fmt::format("test ({} samples): accuracy {:.2f}%, loss {:.4f}\n", test_data->size(),
                             100 * accuracy.accuracy, accuracy.loss);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  options->graph.config.model = "lenet5";
  options->graph.config.hardware = "cpu-core";
  options->graph.config.microbatches = 4;
  options->graph.config.minibatches = 8;
  auto* command = app.add_subcommand(
      "run", "train a network under a schedule on an executor (CPU threads, or GPUs / SM partitions as processors) and report the measured result");
  add_graph_options(*command, options->graph, "2", ProcessorCounts::one);
  add_executor_options(*command, options->executor, true);
  command->add_option("--steps", options->graph.config.minibatches, "minibatches to train (same as --minibatches)");
  options->epochs_given =
      command->add_option("--epochs", options->epochs, "train this many passes over the data (sets --minibatches)");
  command->add_flag("--test", options->test, "measure accuracy on the test split after training (Fashion-MNIST)");
  command->add_flag("--json", options->json, "print the measured result as JSON (the simulate --json schema)");
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->add_option("--trace", options->trace_file,
                      "write a Chrome trace (Perfetto) of the measured run, with the prediction of the same graph as "
                      "processes of their own, to compare them on one timeline")
      ->check(writable_output_file());
  command->add_option("--weights-out", options->weights_file,
                      "write the trained weights as JSON: per layer its name and its parameters (float32 values, "
                      "exactly as trained)")
      ->check(writable_output_file());
  command->add_flag("--distributed", options->distributed,
                    "run across processes: start under `mpirun -np N` (or srun); each MPI rank runs the tasks of its "
                    "processors (contiguous blocks; --procs defaults to N), transfers between ranks are MPI messages, "
                    "and rank 0 reports (docs/distributed.md)");
  command->add_option("--message-timeout", options->message_timeout_s,
                      "--distributed: seconds a task may wait for another rank's task while no message reaches its "
                      "rank, before the job ends naming both")
      ->capture_default_str();
  options->procs_given = command->get_option("--procs");
  command->callback([options] { with_ranks(options->distributed, options->message_timeout_s, [&](mpi::MpiSession* session) { run(*options, session); }); });
}

}  // namespace pipetwin::cli
