// Calibration from any executor's run: per-layer timings (median of repeats), the executor's
// overhead per task, and how long a handoff between two threads takes.
#include "pipetwin/exec/profiling.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "pipetwin/models/error.hpp"

namespace pipetwin {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const TrainingRun& run,
                                 std::int32_t skip_minibatches) {
  if (run.layer_times.empty()) throw Error("internal: calibration from a run without layer times");
  const std::size_t L = network.size();
  std::vector<std::map<TaskKind, std::vector<double>>> seconds(L);
  std::map<std::int32_t, double> layer_sum_s;  // per task
  for (const auto& time : run.layer_times) {
    const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
    if (t.minibatch < skip_minibatches) continue;  // warm-up: cold caches, first allocations
    seconds[static_cast<std::size_t>(time.layer)][time.kind].push_back(time.seconds);
    // A fused B also records what a split BA and BW would cost: its own work is its B records.
    if (time.kind == t.kind) layer_sum_s[time.task] += time.seconds;
  }
  Calibration c;
  c.network = network.name;
  c.samples = graph.samples_per_microbatch;
  for (std::size_t l = 0; l < L; ++l) {
    auto& s = seconds[l];
    LayerTimes& t = c.layers[network.layers[l].name];
    t.forward_s = median_of(s[TaskKind::F]);
    t.activation_grad_s = median_of(s[TaskKind::BA]);
    t.weight_grad_s = median_of(s[TaskKind::BW]);
    if (!s[TaskKind::B].empty()) t.backward_s = median_of(s[TaskKind::B]);
    t.update_s = median_of(s[TaskKind::U]);
  }
  // What a task costs beyond its layers: waiting for nothing, payload bookkeeping, copies.
  std::vector<double> overhead_s;
  for (const auto& [task, sum_s] : layer_sum_s) {
    const TaskTiming& time = run.result.tasks[static_cast<std::size_t>(task)];
    overhead_s.push_back(static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz - sum_s);
  }
  c.task_overhead_s = std::max(0.0, median_of(overhead_s));
  return c;
}

double measure_handoff_s(int repeats) {
  // Two threads pass a token back and forth through a mutex and a condition variable, as a
  // task's end wakes the thread of a task waiting on it.
  std::mutex mutex;
  std::condition_variable changed;
  int token = 0;
  const int rounds = std::max(50, repeats * 20);
  std::thread other([&] {
    for (int r = 0; r < rounds; ++r) {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return token % 2 == 1; });
      ++token;
      changed.notify_all();
    }
  });
  std::vector<double> round_trips;
  for (int r = 0; r < rounds; ++r) {
    const auto begin = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    ++token;
    changed.notify_all();
    changed.wait(lock, [&] { return token % 2 == 0; });
    round_trips.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  }
  other.join();
  return median_of(std::move(round_trips)) / 2;
}

Calibration profile_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                           const Runner& run, const std::function<void(const std::string&)>& progress) {
  if (repeats < 1) throw Error("profile: repeats must be at least 1");
  const ScheduleRequest request = make_request(config);
  // Every task kind of every layer, timed inside a real run: the one-processor sequential
  // schedule, each layer's part of each task recorded; one warm-up minibatch left out.
  GraphConfig sequential = config;
  sequential.schedule = "sequential";
  sequential.processors = 1;
  sequential.calibration_file.clear();
  sequential.calibration.reset();
  sequential.minibatches = 1 + std::max(1, (repeats + config.microbatches - 1) / config.microbatches);
  sequential = without_other_schedules_params(sequential);
  if (progress) {
    progress("profiling " + request.network.name + ": every layer's F, BA, BW, U in a one-processor run (" +
             std::to_string(request.network.batch / config.microbatches) + " samples per task, " +
             std::to_string(sequential.minibatches) + " minibatches)");
  }
  const TaskGraph graph = make_graph(sequential);
  const BatchSampler sampler(data, request.network.batch, sequential.microbatches, sequential.minibatches, seed);
  TrainingOptions options;
  options.seed = seed;
  options.record_layer_times = true;
  const TrainingRun measured = run(graph, request.network, sampler, options);
  Calibration calibration = calibration_from_run(graph, request.network, measured, 1);
  calibration.source = "profile of " + request.network.name;
  return calibration;
}

}  // namespace pipetwin
