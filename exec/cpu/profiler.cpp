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

double measure_copy_seconds(std::int64_t bytes, int repeats, int concurrent) {
  if (concurrent < 1) throw Error("profile: concurrent copies must be at least 1");
  if (bytes < static_cast<std::int64_t>(sizeof(float))) throw Error("profile: a copy of at least one float");
  // Small copies are timed in batches of about 1 MiB, so that the clock's resolution does not weigh.
  const int batch = static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{1} << 20) / bytes));
  std::vector<double> seconds(static_cast<std::size_t>(concurrent));
  std::atomic<int> ready{0};
  const auto copier = [&](int i) {
    const Matrix source = Matrix::Constant(bytes / static_cast<std::int64_t>(sizeof(float)), 1, 1.0f);  // a thread's own
    Matrix copy;
    ++ready;
    while (ready.load() < concurrent) std::this_thread::yield();  // the threads copy at once
    seconds[static_cast<std::size_t>(i)] = median_seconds(repeats, [&] {
      for (int k = 0; k < batch; ++k) copy = Matrix(source);  // a new buffer each time, as a transfer's
    }) / batch;
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
  return median_of(std::move(seconds));
}

Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress, int concurrent,
                        const std::vector<int>& pin_cpus, double handoff_spin_s) {
  Calibration calibration = profile_layers(config, data, repeats, seed, run_cpu, progress, concurrent, pin_cpus);
  calibration.device = "cpu";
  calibration.device_name = (concurrent == 1 ? std::string("one CPU thread")
                                             : "one of " + std::to_string(concurrent) + " CPU threads at once") +
                            " (" + kernel_libraries() + ", fp32)";
  if (progress) progress("measuring copy bandwidth and thread handoff latency");
  // From a cache's worth to more than a core's L2: a transfer of a few hundred KiB, its source
  // just written by its task, copies several times faster than an 8 MiB one, whose rate is the
  // table's copy bandwidth.
  for (const std::int64_t bytes : {std::int64_t{16} << 10, std::int64_t{128} << 10, std::int64_t{1} << 20, std::int64_t{8} << 20}) {
    calibration.copy_seconds.push_back({bytes, measure_copy_seconds(bytes, repeats, concurrent)});
  }
  calibration.copy_bytes_per_s = static_cast<double>(calibration.copy_seconds.back().first) / calibration.copy_seconds.back().second;
  calibration.cores = usable_cpu_count();
  // producer -> link thread -> consumer, each waiting for about a task (spinning first as the
  // runs will); a sender that copies itself wakes the consumer alone
  calibration.handoff_spin_s = handoff_spin_for(concurrent, handoff_spin_s, false);
  calibration.handoff_s = measure_handoff_s(repeats, typical_task_s(calibration), calibration.handoff_spin_s);
  calibration.copy_latency_s = 2 * calibration.handoff_s;
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
