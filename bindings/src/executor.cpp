// The executors from Python: train a graph for real, profile a network into a calibration table,
// validate predictions against measurements (CPU threads, or GPUs through the CUDA executor's
// plug-in). Long runs release the GIL.
#include <algorithm>
#include <optional>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/exec/cpu/speed_probe.hpp"
#include "pipetwin/exec/cpu/validation.hpp"
#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/exec/host_allocator.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif

namespace pipetwin::python {
namespace {

// Whether an interrupt (SIGINT: KeyboardInterrupt) is pending; if so it is taken as a request to
// stop, with `warning` as a RuntimeWarning in place of the exception. With the GIL held.
bool interrupted(const char* warning) {
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Clear();
  // Warnings made errors (-W error) would leave an exception set under a normal return.
  if (PyErr_WarnEx(PyExc_RuntimeWarning, warning, 1) != 0) PyErr_Clear();
  return true;
}

struct TrainingResult {
  PyResult result;
  std::vector<double> minibatch_loss;
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::vector<cpu::Vector> weights;
  std::int64_t host_tensors_reused = 0, host_tensors_allocated = 0;  // TrainingRun's (the CPU's pools)
};

// A process's MPI session for runs across ranks (docs/distributed.md), held by the Python object:
// closed (MPI_Finalize) by close() or when the object goes; MPI starts once per process.
class PyMpiSession {
 public:
  PyMpiSession() : session_(std::make_unique<mpi::MpiSession>()) {}
  mpi::MpiSession& open() {
    if (!session_) throw Error("this MPI session is closed (MPI starts once per process: keep the session open until the last run)");
    return *session_;
  }
  void close() { session_.reset(); }

 private:
  std::unique_ptr<mpi::MpiSession> session_;
};

// The CUDA executor's options as given (the CLI's --placement, --partition-sms, --gpu, --tf32,
// --gpu-wait), checked; a CPU run takes only their defaults.
cuda::CudaOptions checked_cuda_options(const std::string& device, const std::string& placement, int partition_sms,
                                       int gpu, bool tf32, const std::string& gpu_wait) {
  if (device != "cpu" && device != "cuda") throw Error("device must be 'cpu' or 'cuda', got '" + device + "'");
  cuda::CudaOptions options;
  if (device == "cpu") {
    if (placement != options.placement || partition_sms != 0 || gpu != 0 || tf32 || gpu_wait != options.wait) {
      throw Error("placement, partition_sms, gpu, tf32 and gpu_wait place a run on GPUs: give device='cuda'");
    }
    return options;
  }
  if (placement != "partitions" && placement != "gpus" && placement != "streams") {
    throw Error("placement must be 'partitions', 'gpus' or 'streams', got '" + placement + "'");
  }
  if (partition_sms < 0) throw Error("partition_sms must be 0 (the largest equal share) or more, got " + std::to_string(partition_sms));
  if (gpu < 0) throw Error("gpu must be 0 or more, got " + std::to_string(gpu));
  if (gpu_wait != "spin" && gpu_wait != "block") throw Error("gpu_wait must be 'spin' or 'block', got '" + gpu_wait + "'");
  options.placement = placement;
  options.partition_sms = partition_sms;
  options.device = gpu;
  options.tf32 = tf32;
  options.wait = gpu_wait;
  return options;
}

const cuda::PluginEntryPoints* loaded_cuda_plugin() {
  try {
    return cuda::load_cuda_plugin().entry_points;
  } catch (const Error& e) {
    throw Error(std::string("device='cuda': ") + e.what());
  }
}

// Defines `name` with the keyword arguments that place a run on GPUs after `extra` (the others
// and the docstring): train, profile and validate take them last, in checked_cuda_options' order.
template <typename F, typename... Extra>
void def_with_gpu_arguments(py::module_& m, const char* name, F&& f, Extra&&... extra) {
  m.def(name, std::forward<F>(f), std::forward<Extra>(extra)..., py::arg("device") = "cpu",
        py::arg("placement") = "partitions", py::arg("partition_sms") = 0, py::arg("gpu") = 0,
        py::arg("tf32") = false, py::arg("gpu_wait") = "spin");
}

}  // namespace

void bind_executor(py::module_& m) {
  py::class_<PyMpiSession>(m, "MpiSession",
                           "MPI for runs across processes: start the script under mpirun (mpirun -np N python script.py), "
                           "open one session per process, and pass it to run(session=...). Each rank runs its own "
                           "processors' tasks; rank 0 gets the result. MPI starts once per process: close() (or the "
                           "end of a with block) ends it for good.")
      .def(py::init<>())
      .def_property_readonly("rank", [](PyMpiSession& s) { return s.open().rank(); }, "this process's rank")
      .def_property_readonly("ranks", [](PyMpiSession& s) { return s.open().ranks(); }, "how many ranks the job has")
      .def("close", &PyMpiSession::close, "Ends MPI in this process (MPI_Finalize), after every rank's last run.")
      .def("__enter__", [](PyMpiSession& s) -> PyMpiSession& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](PyMpiSession& s, const py::object&, const py::object&, const py::object&) { s.close(); });

  py::class_<TrainingResult>(m, "TrainingResult", "A measured training run: the Result, the loss per minibatch, "
                                                   "test accuracy when asked, the final weights.")
      .def_readonly("result", &TrainingResult::result)
      .def_readonly("minibatch_loss", &TrainingResult::minibatch_loss)
      .def_readonly("test_accuracy", &TrainingResult::test_accuracy)
      .def_readonly("test_loss", &TrainingResult::test_loss)
      .def_readonly("host_tensors_reused", &TrainingResult::host_tensors_reused,
                    "CPU: tensors made in a buffer a dead tensor gave back to its processor's pool (0 on GPUs)")
      .def_readonly("host_tensors_allocated", &TrainingResult::host_tensors_allocated,
                    "CPU: tensors that allocated their buffer (after the first steps, none; 0 on GPUs)")
      .def("weights", [](const TrainingResult& t) {
        py::typing::List<py::array_t<float>> out;
        for (const auto& w : t.weights) out.append(py::array_t<float>(w.size(), w.data()));
        return out;
      }, "Per layer, the newest weight version as a flat float32 array (W, bias, gamma, beta).")
      .def("__repr__", [](const TrainingResult& t) {
        return "<pipetwin.TrainingResult " + t.result.graph->schedule + " · P=" +
               std::to_string(t.result.graph->processor_count()) + " · last loss " +
               std::to_string(t.minibatch_loss.empty() ? 0.0 : t.minibatch_loss.back()) + ">";
      });

  def_with_gpu_arguments(m, "train", [](const Graph& graph, const std::string& data, const std::string& data_dir, double learning_rate,
                    double momentum, std::uint64_t seed, bool test, bool memory_timeline, std::optional<double> handoff_spin_us,
                    bool pin_threads, const std::string& transfer_threads,
                    const py::typing::Optional<PyMpiSession>& session_arg,
                    double message_timeout_s, const std::string& device, const std::string& placement,
                    int partition_sms, int gpu, bool tf32, const std::string& gpu_wait) -> std::optional<TrainingResult> {
    PyMpiSession* session = session_arg.is_none() ? nullptr : session_arg.cast<PyMpiSession*>();
    // The CUDA executor is the CLI's plug-in, loaded here only when asked (cuBLAS stays out of
    // every other call); its own run says when this machine has no CUDA device.
    const cuda::CudaOptions cuda_options = checked_cuda_options(device, placement, partition_sms, gpu, tf32, gpu_wait);
    const cuda::PluginEntryPoints* cuda_plugin = device == "cuda" ? loaded_cuda_plugin() : nullptr;
    TrainingOptions checked;
    checked.learning_rate = learning_rate;
    checked.momentum = momentum;
    if (handoff_spin_us && !(*handoff_spin_us >= 0)) {  // not the automatic spin's sentinel
      throw Error("the handoff spin must be from 0 to 1 second (or automatic), got " + short_number(*handoff_spin_us * 1e-6));
    }
    checked.handoff_spin_s = handoff_spin_us ? *handoff_spin_us * 1e-6 : kAutomaticHandoffSpin;
    checked.transfer_threads = parse_transfer_threads(transfer_threads);
    check_training_options(checked);  // before the data is loaded
    const Network network = graph_network(*graph.graph);
    const Dataset train_data = load_dataset_for(data, data_dir, network, "train");
    const TaskGraph& g = *graph.graph;
    const BatchSampler sampler = graph_sampler(train_data, g, network, seed);
    TrainingOptions options;
    options.learning_rate = learning_rate;
    options.momentum = momentum;
    options.seed = seed;
    options.record_memory_timeline = memory_timeline;
    options.handoff_spin_s = checked.handoff_spin_s;
    options.transfer_threads = checked.transfer_threads;
    if (pin_threads) options.pin_cpus = cpus_to_pin();
    Distribution distribution;
    if (session != nullptr) {
      mpi::MpiSession& open = session->open();
      if (open.ranks() > g.processor_count()) {
        throw Error("run across processes: " + std::to_string(open.ranks()) + " ranks for " +
                    std::to_string(g.processor_count()) + " processors; give each rank at least one");
      }
      distribution.transport = &open.transport();
      distribution.message_timeout_s = message_timeout_s;
      options.distribution = &distribution;
    }
    TrainingRun run;
    {
      py::gil_scoped_release release;
      keep_freed_host_memory();
      run = cuda_plugin != nullptr ? cuda_plugin->run(g, network, sampler, options, cuda_options, nullptr)
                                   : cpu::run_cpu(g, network, sampler, options);
    }
    if (session != nullptr && session->open().rank() != 0) return std::nullopt;  // rank 0 reports
    TrainingResult out{PyResult{graph.graph, std::move(run.result)}, run.minibatch_loss, std::nullopt, std::nullopt,
                       std::move(run.final_weights), run.host_tensors_reused, run.host_tensors_allocated};
    if (test) {
      const Dataset test_data = load_dataset_for(data, data_dir, network, "test");
      const cpu::Accuracy accuracy = cpu::evaluate_accuracy(network, out.weights, test_data);
      out.test_accuracy = accuracy.accuracy;
      out.test_loss = accuracy.loss;
    }
    return out;
  }, py::arg("graph"), py::arg("data") = "auto", py::arg("data_dir") = kFashionMnistDir,
     py::arg("learning_rate") = 0.05, py::arg("momentum") = 0.0, py::arg("seed") = 1, py::arg("test") = false,
     py::arg("memory_timeline") = false, py::arg("handoff_spin_us") = py::none(), py::arg("pin_threads") = false,
     py::arg("transfer_threads") = "auto", py::arg("session") = py::none(),
     py::arg("message_timeout_s") = 60.0,
     "Trains the graph's network under its schedule on CPU threads (one per processor, and per link unless "
     "the senders copy their transfers: transfer_threads), or with device='cuda' on GPUs: processors as SM partitions "
     "of GPU `gpu` (placement='partitions', partition_sms each, 0: the largest equal share), one GPU each ('gpus') "
     "or streams on one GPU ('streams'); the CUDA executor is loaded from beside this module, or from "
     "$PIPETWIN_CUDA_PLUGIN. Real "
     "layers, real data (Fashion-MNIST for 28x28 networks, else synthetic), SGD. Returns a TrainingResult. "
     "With an MpiSession, across the job's ranks (each runs its processors' tasks): rank 0 returns the "
     "TrainingResult, the other ranks None.");

  m.def("write_output_file", &write_output_file, py::arg("path"), py::arg("text"),
        "Writes text to path whole or not at all: through symbolic links; a device or FIFO is written, never "
        "replaced; a directory is an error.");
  m.def("check_output_file", &check_output_file, py::arg("path"),
        "Raises the error write_output_file would raise for path itself (a directory, a missing folder), writing "
        "nothing.");
  def_with_gpu_arguments(m, "profile", [](const std::string& model, int microbatches, const ParamsArg& params, const std::string& data,
                      const std::string& data_dir, int repeats, std::uint64_t seed, int concurrent, bool pin_threads,
                      const std::string& concurrent_timing, const std::string& unmarked_twins, const std::string& device,
                      const std::string& placement, int partition_sms, int gpu, bool tf32, const std::string& gpu_wait) {
    cuda::CudaOptions cuda_options = checked_cuda_options(device, placement, partition_sms, gpu, tf32, gpu_wait);
    const bool on_gpu = device == "cuda";
    if (on_gpu && pin_threads) throw Error("pin_threads pins a CPU profile's threads; a GPU profile (device='cuda') has none to pin");
    const bool twins = takes_unmarked_twins(unmarked_twins, on_gpu, concurrent);  // checks the mode
    const cuda::PluginEntryPoints* cuda_plugin = on_gpu ? loaded_cuda_plugin() : nullptr;
    const GraphConfig config = graph_config(model, "sequential", on_gpu ? "h100" : "cpu-core", 1, microbatches, 1, params, "");
    const Network network = make_request(config).network;
    const Dataset dataset = load_dataset_for(data, data_dir, network, "train");
    const cpu::ConcurrentTiming timing = cpu::parse_concurrent_timing(concurrent_timing);
    Calibration calibration;
    {
      py::gil_scoped_release release;
      keep_freed_host_memory();
      if (cuda_plugin != nullptr) {
        cuda_options.unmarked_twins = unmarked_twins;  // profile_cuda decides by its concurrency, as the CLI's
        calibration = cuda_plugin->profile(config, dataset, repeats, seed, cuda_options, {}, concurrent, timing);
      } else {
        calibration = cpu::profile_cpu(config, dataset, repeats, seed, {}, concurrent,
                                       pin_threads ? cpus_to_pin() : std::vector<int>{}, kAutomaticHandoffSpin, timing,
                                       TransferThreads::automatic, twins);
      }
    }
    return calibration_to_json_text(calibration);
  }, py::arg("model"), py::arg("microbatches") = 4, py::arg("params") = py::none(), py::arg("data") = "auto",
     py::arg("data_dir") = kFashionMnistDir, py::arg("repeats") = kDefaultProfileRepeats, py::arg("seed") = 1, py::arg("concurrent") = 1,
     py::arg("pin_threads") = false, py::arg("concurrent_timing") = "pipeline", py::arg("unmarked_twins") = "auto",
     "Times every task kind of every layer on one processor, a CPU thread or with device='cuda' a GPU placement "
     "(as train's) (with concurrent > 1: the table for as many processors, its layers timed in a pipeline of that "
     "many, or as that many copies at once, as concurrent_timing says); returns the calibration table as JSON "
     "text. unmarked_twins: which tables make every timed run again without its layers' marks and fit what a "
     "task costs beyond its layers from that twin's task times: 'all', 'none', or 'auto' (a GPU's "
     "one-processor table).");

  def_with_gpu_arguments(m, "validate", [](const std::string& model, const std::vector<std::string>& schedules,
                       const std::vector<int>& processors, int microbatches, int minibatches, const ParamsArg& params,
                       const std::string& calibration, const std::string& engine, int runs, const std::string& data,
                       const std::string& data_dir, double learning_rate, std::uint64_t seed, int max_runs,
                       double target, bool pin_threads, const std::string& transfer_threads,
                       const std::string& concurrent_timing, int warmup_rounds, double machine_tolerance,
                       int machine_retakes, double table_tolerance, double co_run_tolerance, double time_limit_s,
                       std::optional<double> peak_phase, const std::string& device,
                       const std::string& placement, int partition_sms, int gpu, bool tf32, const std::string& gpu_wait) {
    const cuda::CudaOptions cuda_options = checked_cuda_options(device, placement, partition_sms, gpu, tf32, gpu_wait);
    const bool on_gpu = device == "cuda";
    if (on_gpu && cuda_options.placement == "partitions" && cuda_options.partition_sms == 0) {
      // The CLI sizes them from the GPU's SM count; this module does not link the CUDA runtime.
      throw Error("validate(device='cuda') on SM partitions needs partition_sms: every processor count must run on "
                  "partitions of one size (e.g. 16 on a 132-SM H100 for P up to 8)");
    }
    const cuda::PluginEntryPoints* cuda_plugin = on_gpu ? loaded_cuda_plugin() : nullptr;
    GraphConfig config = graph_config(model, schedules.empty() ? "sequential" : schedules.front(),
                                      on_gpu ? "h100" : "cpu-core", 1, microbatches, minibatches, params, calibration);
    const Network network = make_request(config).network;
    const Dataset dataset = load_dataset_for(data, data_dir, network, "train");
    if (engine != "systemc" && engine != "analytic") throw Error("engine must be systemc or analytic, got '" + engine + "'");
#ifndef PIPETWIN_HAVE_SYSTEMC
    if (engine == "systemc") throw Error("this pipetwin was built without SystemC; use engine='analytic'");
#endif
    ValidationOptions options;
    options.schedules = schedules;
    options.processors = processors;
    options.runs = runs;
    options.max_runs = max_runs;
    if (warmup_rounds < 0) throw Error("warmup_rounds must be 0 or more, got " + std::to_string(warmup_rounds));
    options.warmup_rounds = warmup_rounds;
    options.ci_target = target;
    options.training.learning_rate = learning_rate;
    options.training.seed = seed;
    options.training.transfer_threads = parse_transfer_threads(transfer_threads);
    const std::vector<int> pinned = pin_threads ? cpus_to_pin() : std::vector<int>{};
    options.training.pin_cpus = pinned;
    if (!(machine_tolerance >= 0 && machine_tolerance <= 1)) {
      throw Error("machine_tolerance must be a fraction from 0 to 1, got " + std::to_string(machine_tolerance));
    }
    if (machine_retakes < 0) throw Error("machine_retakes must be 0 or more, got " + std::to_string(machine_retakes));
    if (!on_gpu && machine_tolerance > 0 && !processors.empty()) {  // as the CLI's --machine-tolerance
      const std::vector<int> cpus = cpu::cpus_to_read(pinned, *std::max_element(processors.begin(), processors.end()));
      options.read_machine = [cpus] { return cpu::time_fixed_work_s(cpus); };
      options.machine_tolerance = machine_tolerance;
    }
    if (!(table_tolerance >= 0)) throw Error("table_tolerance must be 0 or more, got " + std::to_string(table_tolerance));
    if (!(co_run_tolerance >= 0)) throw Error("co_run_tolerance must be 0 or more, got " + std::to_string(co_run_tolerance));
    options.machine_retakes = machine_retakes;
    options.table_tolerance = table_tolerance;
    options.co_run_tolerance = co_run_tolerance;
    if (!(time_limit_s >= 0)) throw Error("time_limit_s must be 0 or more seconds, got " + std::to_string(time_limit_s));
    options.time_limit_s = time_limit_s;
    if (peak_phase && !(*peak_phase >= 0 && *peak_phase < 1)) {
      throw Error("peak_phase must be a fraction from 0 to below 1 (or None: each row's table's task spread), got " +
                  std::to_string(*peak_phase));
    }
    options.peak_phase = peak_phase ? *peak_phase : -1.0;
    // KeyboardInterrupt (Ctrl-C, a notebook's interrupt) ends the rounds once the one under way is
    // done, and the rounds done are returned ('stopped_early'), as the CLI does on Ctrl-C.
    options.stop_requested = [] {
      py::gil_scoped_acquire gil;
      return interrupted("validate() interrupted: the rounds done are returned ('stopped_early')");
    };
    ValidationReport report;
    {
      py::gil_scoped_release release;
      keep_freed_host_memory();
      if (calibration.empty()) {
        // A calibration at the start of every round of runs (A/B/A/B).
        const cpu::ConcurrentTiming timing = cpu::parse_concurrent_timing(concurrent_timing);
        options.calibrate = [&, timing](int processors) {
          if (cuda_plugin != nullptr) {  // the tables' overheads from unmarked twins as the CLI's auto
            return cuda_plugin->profile(config, dataset, kDefaultProfileRepeats, seed, cuda_options, {}, processors, timing);
          }
          return cpu::profile_cpu(config, dataset, kDefaultProfileRepeats, seed, {}, processors, pinned, kAutomaticHandoffSpin, timing,
                                  options.training.transfer_threads);
        };
      }
      const Predictor predict = [&](const TaskGraph& g) {
#ifdef PIPETWIN_HAVE_SYSTEMC
        if (engine == "systemc") return simulate(g);
#endif
        return evaluate(g);
      };
      if (cuda_plugin != nullptr) {
        report = validate(config, dataset, options, predict,
                          [&](const TaskGraph& g, const Network& network, const BatchSampler& sampler,
                              const TrainingOptions& training) {
                            return cuda_plugin->run(g, network, sampler, training, cuda_options, nullptr);
                          });
      } else {
        report = cpu::validate_cpu(config, dataset, options, predict);
      }
    }
    // An interrupt during the last round: the validation is whole, and returned rather than lost.
    interrupted("validate() interrupted in its last round: the validation is complete and returned");
    JsonDict out;
    out["rows"] = to_python(validation_rows_json(report));
    const nlohmann::ordered_json summary = validation_summary_json(report);
    for (const auto& [key, value] : summary.items()) {
      if (key != "kendall_tau") out[key.c_str()] = to_python(value);
    }
    out["kendall_tau"] = report.kendall_tau;  // keyed by P as an int
    return out;
  }, py::arg("model"), py::arg("schedules"), py::arg("processors"), py::arg("microbatches") = 4,
     py::arg("minibatches") = 16, py::arg("params") = py::none(), py::arg("calibration") = "",
     py::arg("engine") = "systemc", py::arg("runs") = 5, py::arg("data") = "auto",
     py::arg("data_dir") = kFashionMnistDir, py::arg("learning_rate") = 0.05, py::arg("seed") = 1,
     py::arg("max_runs") = 0, py::arg("target") = 0.05, py::arg("pin_threads") = false,
     py::arg("transfer_threads") = "auto", py::arg("concurrent_timing") = "pipeline", py::arg("warmup_rounds") = 0,
     py::arg("machine_tolerance") = 0.06, py::arg("machine_retakes") = 2, py::arg("table_tolerance") = 0.10,
     py::arg("co_run_tolerance") = 0.25, py::arg("time_limit_s") = 0.0, py::arg("peak_phase") = py::none(),
     "Predicted (from a calibration; profiled first when none is given) against measured (the CPU executor, or "
     "with device='cuda' the CUDA executor placed as train's; SM partitions need partition_sms) step "
     "time, speedup and peak memory per schedule and processor count, and the replay error (the engine fed each "
     "run's own task times). Returns {'rows': [...], 'mean_abs_step_error', 'max_abs_step_error', "
     "'mean_abs_speedup_error', 'max_abs_speedup_error', 'speedup_error_ci', 'mean_abs_replay_error', "
     "'max_abs_replay_error', 'noise_floor', 'calibrations', 'calibration_drift', 'calibration_spread', "
     "'co_run_slowdown': {P: slowdown}, 'footprint_slowdown' (the rounds' median), 'error_ci', 'rounds', 'kendall_tau': {P: tau}, "
     "'same_program_schedules': {P: [[schedules that run one program there, tied in the ranking]]}, "
     "'separable_kendall_tau': {P: {'tau', 'pairs', 'of'}}, 'pair_order': {P: {'in_order', 'against', "
     "'predicted_equal', 'measured_equal', 'widest_predicted_equal_gap'}}}. "
     "With max_runs > runs, rounds are added until every row's step and speedup errors are known within target (95% "
     "confidence). warmup_rounds: whole rounds run first, none of their figures kept. On the CPU, with "
     "machine_tolerance > 0, the machine's speed is read before and after every calibration and run and one taken "
     "off its usual speed by more than that fraction is taken again, up to machine_retakes times ('machine_state'). "
     "From the fourth round a table off its earlier peers is taken again, up to machine_retakes times "
     "('retaken_tables', 'kept_off_tables': {P: count}): a one-processor table whose minibatch ran more than "
     "table_tolerance slower than their median, a table for more processors whose co-run slowdown (its minibatch over "
     "the round's one-processor table's) was more than co_run_tolerance over theirs (0: none judged). "
     "time_limit_s > 0: no round begun that would end past that many seconds (a round as long as the one before); "
     "an interrupt (KeyboardInterrupt) ends the rounds once the one under way is done; either way the rounds done "
     "are returned, with 'stopped_early' true. peak_phase: each row's predicted step peak is the largest over its "
     "processors paced that fraction slower and faster than their price, one at a time (0: the simulated timing "
     "alone; None: the row's table's task spread), the simulated timing's beside it "
     "('predicted_nominal_step_peak_memory_bytes', 'peak_phase' in each row).");
}

}  // namespace pipetwin::python
