// Per-layer timings (median of repeats), executor overhead, copy bandwidth, and accuracy.
#include "pipetwin/exec/cpu/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <map>
#include <random>

#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {
namespace {

using Clock = std::chrono::steady_clock;

template <typename Body>
double median_seconds(int repeats, Body body) {
  std::vector<double> times;
  body();  // warm up caches and allocations
  for (int r = 0; r < repeats; ++r) {
    const auto begin = Clock::now();
    body();
    times.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}


}  // namespace

Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const Result& measured) {
  const std::size_t L = network.size();
  std::vector<std::map<TaskKind, std::vector<double>>> seconds(L);
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    if (t.first_layer != t.last_layer) throw Error("internal: calibration run with a task of several layers");
    const TaskTiming& time = measured.tasks[static_cast<std::size_t>(t.id)];
    seconds[static_cast<std::size_t>(t.first_layer)][t.kind].push_back(
        static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Calibration c;
  c.device = "cpu";
  c.device_name = "one CPU thread (Eigen, fp32)";
  c.network = network.name;
  c.samples = graph.samples_per_microbatch;
  for (std::size_t l = 0; l < L; ++l) {
    auto& s = seconds[l];
    c.layers[network.layers[l].name] = {median(s[TaskKind::F]), median(s[TaskKind::BA]), median(s[TaskKind::BW]),
                                        median(s[TaskKind::U])};
  }
  return c;
}

double measure_copy_bytes_per_s(int repeats) {
  const Matrix source = Matrix::Constant(1024, 2048, 1.0f);  // 8 MiB
  Matrix copy;
  const double seconds = median_seconds(repeats, [&] { copy = Matrix(source); });
  return static_cast<double>(bytes_of(source)) / seconds;
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
    const auto begin = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    ++token;
    changed.notify_all();
    changed.wait(lock, [&] { return token % 2 == 0; });
    round_trips.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
  }
  other.join();
  std::sort(round_trips.begin(), round_trips.end());
  return round_trips[round_trips.size() / 2] / 2;
}

double measure_task_overhead_s(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                               const Calibration& calibration) {
  TrainingOptions options;
  const TrainingRun run = run_cpu(graph, network, data, options);
  std::vector<double> excess_s;
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    const TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
    double calibrated_s = 0;
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
      calibrated_s += calibrated_seconds(calibration, network.layers[static_cast<std::size_t>(l)], t.kind, graph.samples_per_microbatch);
    }
    excess_s.push_back(static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz - calibrated_s);
  }
  if (excess_s.empty()) return 0.0;
  // The median: the first tasks of a run pay for cold caches and page faults once.
  std::sort(excess_s.begin(), excess_s.end());
  return std::max(0.0, excess_s[excess_s.size() / 2]);
}

Accuracy evaluate_accuracy(const Network& network, const std::vector<Vector>& weights, const Dataset& data,
                           std::int64_t batch) {
  const auto ops = make_layer_ops(network.layers);
  if (weights.size() != ops.size()) throw Error("evaluate: weights for " + std::to_string(weights.size()) + " layers, network has " + std::to_string(ops.size()));
  if (data.samples.rows() != shape_elements(network.input_shape)) throw Error("evaluate: dataset " + data.name + " does not fit " + network.name);
  Accuracy result;
  std::int64_t correct = 0;
  for (std::int64_t begin = 0; begin < data.size(); begin += batch) {
    const std::int64_t n = std::min(batch, data.size() - begin);
    Activation a{data.samples.middleCols(begin, n), Matrix()};
    for (std::size_t l = 0; l + 1 < ops.size(); ++l) {
      LayerStash unused;
      a = ops[l].forward(weights[l], a, unused, nullptr, 1, nullptr);
    }
    const Matrix logits = ops.back().logits(weights.back(), a);
    std::vector<std::int32_t> labels(data.labels.begin() + begin, data.labels.begin() + begin + n);
    result.loss += softmax_cross_entropy(logits, labels, 1, nullptr);
    for (std::int64_t s = 0; s < n; ++s) {
      Eigen::Index best = 0;
      logits.col(s).maxCoeff(&best);
      correct += best == labels[static_cast<std::size_t>(s)] ? 1 : 0;
    }
  }
  result.loss /= static_cast<double>(data.size());
  result.accuracy = static_cast<double>(correct) / static_cast<double>(data.size());
  return result;
}

}  // namespace pipetwin::cpu
