// The CPU calibration (layer times from a CPU run, the copy bandwidth of a host copy, the thread
// handoff) and the accuracy of trained weights on a test set.
#include "pipetwin/exec/cpu/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
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
  return median_of(std::move(times));
}

}  // namespace

// The CPUs this process may run on: its affinity mask (taskset, a cgroup's cpuset, mpirun's
// binding), else the machine's hardware threads.
std::int32_t usable_cpus() {
  const std::vector<int> ids = usable_cpu_ids();
  return static_cast<std::int32_t>(ids.empty() ? std::thread::hardware_concurrency() : ids.size());
}

double measure_copy_bytes_per_s(int repeats, int concurrent) {
  if (concurrent < 1) throw Error("profile: concurrent copies must be at least 1");
  std::vector<double> bytes_per_s(static_cast<std::size_t>(concurrent));
  std::atomic<int> ready{0};
  const auto copier = [&](int i) {
    const Matrix source = Matrix::Constant(1024, 2048, 1.0f);  // 8 MiB, a thread's own
    Matrix copy;
    ++ready;
    while (ready.load() < concurrent) std::this_thread::yield();  // the threads copy at once
    const double seconds = median_seconds(repeats, [&] { copy = Matrix(source); });
    bytes_per_s[static_cast<std::size_t>(i)] = static_cast<double>(bytes_of(source)) / seconds;
  };
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(concurrent));
  const auto guarded = [&](int i) {
    try {
      copier(i);
    } catch (...) {
      failed[static_cast<std::size_t>(i)] = std::current_exception();
      ready += concurrent;  // no thread waits for this one
    }
  };
  std::vector<std::thread> others;
  for (int i = 1; i < concurrent; ++i) others.emplace_back(guarded, i);
  guarded(0);
  for (auto& t : others) t.join();
  for (const auto& e : failed) {
    if (e) std::rethrow_exception(e);
  }
  return median_of(std::move(bytes_per_s));
}

Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress, int concurrent,
                        const std::vector<int>& pin_cpus) {
  Calibration calibration = profile_layers(config, data, repeats, seed, run_cpu, progress, concurrent, pin_cpus);
  calibration.device = "cpu";
  calibration.device_name = (concurrent == 1 ? std::string("one CPU thread")
                                             : "one of " + std::to_string(concurrent) + " CPU threads at once") +
                            " (" + kernel_libraries() + ", fp32)";
  if (progress) progress("measuring copy bandwidth and thread handoff latency");
  calibration.copy_bytes_per_s = measure_copy_bytes_per_s(repeats, concurrent);
  calibration.cores = usable_cpus();
  // producer -> link thread -> consumer, each asleep for about a task
  calibration.copy_latency_s = 2 * measure_handoff_s(repeats, typical_task_s(calibration));
  return calibration;
}

Accuracy evaluate_accuracy(const Network& network, const std::vector<HostWeights>& weights, const Dataset& data,
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
