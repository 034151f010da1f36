// Layer times, copy bandwidth, then the executor's per-task overhead measured on a one-processor
// sequential run of the same microbatches.
#include "profile_calibration.hpp"

#include <iostream>

#include "pipetwin/exec/cpu/profiler.hpp"

namespace pipetwin::cli {

Calibration profile_cpu_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                    bool progress) {
  const ScheduleRequest request = make_request(config);
  const std::int64_t samples = request.network.batch / config.microbatches;
  const auto data = load_data(executor, request.network, "train");
  // Every task kind of every layer, timed inside a real run: the one-processor sequential
  // schedule, each layer's part of each task recorded; one warm-up minibatch left out.
  GraphConfig sequential = config;
  sequential.schedule = "sequential";
  sequential.processors = 1;
  sequential.calibration_file.clear();
  sequential.calibration.reset();
  sequential.minibatches = 1 + std::max(1, (repeats + config.microbatches - 1) / config.microbatches);
  sequential.params = without_other_schedules_params(sequential).params;
  if (progress) {
    std::cerr << "profiling " << request.network.name << ": every layer's F, BA, BW, U in a one-processor run ("
              << samples << " samples per task, " << sequential.minibatches << " minibatches)\n";
  }
  const TaskGraph graph = make_graph(sequential);
  const BatchSampler sampler(*data, request.network.batch, sequential.microbatches, sequential.minibatches, executor.seed);
  cpu::TrainingOptions options;
  options.record_layer_times = true;
  const cpu::TrainingRun run = cpu::run_cpu(graph, request.network, sampler, options);
  Calibration calibration = cpu::calibration_from_run(graph, request.network, run, 1);
  calibration.source = "profile of " + request.network.name;
  calibration.copy_bytes_per_s = cpu::measure_copy_bytes_per_s(repeats);
  calibration.copy_latency_s = 2 * cpu::measure_handoff_s(repeats);  // producer -> link -> consumer
  return calibration;
}

}  // namespace pipetwin::cli
