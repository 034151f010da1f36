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
  auto run = [&](const GraphConfig& c) {
    const TaskGraph graph = make_graph(c);
    const BatchSampler sampler(*data, request.network.batch, c.microbatches, c.minibatches, executor.seed);
    return std::make_pair(graph, cpu::run_cpu(graph, request.network, sampler, cpu::TrainingOptions()));
  };
  GraphConfig base = config;
  base.processors = 1;
  base.calibration_file.clear();
  base.calibration.reset();
  // Every task kind of every layer, timed by the executor: per-layer tasks on one processor.
  if (progress) std::cerr << "profiling " << request.network.name << ": every layer's F, BA, BW, U on one processor ("
                          << samples << " samples per task, " << repeats << " microbatches)\n";
  GraphConfig per_layer = base;
  per_layer.schedule = "layerpipe";
  per_layer.minibatches = std::max(1, (repeats + config.microbatches - 1) / config.microbatches);
  per_layer.params = without_other_schedules_params(per_layer).params;
  per_layer.params.push_back("schedule.ba_parts=1");
  const auto [layer_graph, layer_run] = run(per_layer);
  Calibration calibration = cpu::calibration_from_run(layer_graph, request.network, layer_run.result);
  calibration.source = "profile of " + request.network.name;
  calibration.copy_bytes_per_s = cpu::measure_copy_bytes_per_s(repeats);
  calibration.copy_latency_s = 2 * cpu::measure_handoff_s(repeats);  // producer -> link -> consumer
  // What a task of several layers costs beyond its layers: measured on sequential, one processor.
  if (progress) std::cerr << "measuring the executor's cost per task on a one-processor sequential run\n";
  GraphConfig sequential = base;
  sequential.schedule = "sequential";
  sequential.minibatches = per_layer.minibatches;
  sequential.params = without_other_schedules_params(sequential).params;
  const TaskGraph graph = make_graph(sequential);
  const BatchSampler sampler(*data, request.network.batch, sequential.microbatches, sequential.minibatches, executor.seed);
  calibration.task_overhead_s = cpu::measure_task_overhead_s(graph, request.network, sampler, calibration);
  return calibration;
}

}  // namespace pipetwin::cli
