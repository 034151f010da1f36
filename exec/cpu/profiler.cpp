// The CPU calibration (layer times from a CPU run, the copy bandwidth of a host copy, the thread
// handoff) and the accuracy of trained weights on a test set.
#include "pipetwin/exec/cpu/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <exception>
#include <thread>

#include "../common/spin_wait.hpp"
#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/exec/cpu/reuse_curve.hpp"
#include "pipetwin/exec/cpu/wait_curve.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Re-reads timed per working set of the reuse curve: the median of 25, about 0.2 s in all on the
// 2-vCPU AVX-512 machine (51 took 0.45 s). There eight profiles' curves (five with 51, three with
// 25) put the far end (32 MiB) at 23.9-29.5 ps a byte and the middle (1.25 MiB) at 5.5-12.3: the
// machine's noise more than the medians', and each validate round measures the curve again.
constexpr int kReuseCurveRepeats = 25;

// The wait curve's footprint and repeats: 8 MiB, four times the 2 MiB L2 of the 2-vCPU machines
// of 2026-11-29, in the middle of the footprints the idle benchmark measured there (1.5-32 MiB all
// lost 15-60 ps a byte after 5 ms and 100-140 after 20 ms; docs/executor.md, "Waits that cost the
// caches"); 11 rounds of the four waits and the work, about 0.9 s.
constexpr std::int64_t kWaitCurveFootprintBytes = std::int64_t{8} << 20;
constexpr int kWaitCurveRepeats = 11;

}  // namespace

double measure_copy_seconds(std::int64_t bytes, int repeats, int concurrent, double spin_s) {
  if (concurrent < 1) throw Error("profile: concurrent copies must be at least 1");
  if (bytes < static_cast<std::int64_t>(sizeof(float))) throw Error("profile: a copy of at least one float");
  // Small copies are timed in batches of about 1 MiB, so that the clock's resolution does not weigh.
  const int batch = static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{1} << 20) / bytes));
  const auto count = static_cast<std::size_t>(concurrent);
  // Thread i hands each batch of copies to thread i + 1 (mod concurrent), which reads every
  // float of them and frees them before thread i copies again, as a transfer's receiver reads
  // and frees its data before the next transfer: glibc hands the freed buffer back to the thread
  // that allocated it, so the next batch lands in memory that another core's cache holds, and
  // must take it back line by line (on a 2-vCPU VM, 800 KB copied in 350-450 us so, in 18 us
  // where only the copier had touched it). One thread reads its own.
  struct Inbox {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Matrix> copies;
    std::atomic<bool> full{false};  // until its copies are read and freed; set under `mutex`
  };
  std::vector<Inbox> inboxes(count);
  std::atomic<bool> failed{false};
  // Waits as the runs' threads wait for a task's inputs: spinning for up to spin_s, then asleep
  // (with 0 the slow copies above were not seen: a thread that sleeps gives its core up).
  const auto wait_for = [&](Inbox& inbox, bool full) {
    const auto done = [&] { return inbox.full.load() == full || failed.load(); };
    if (exec::spin_until(done, spin_s)) return std::unique_lock<std::mutex>(inbox.mutex);
    std::unique_lock<std::mutex> lock(inbox.mutex);
    inbox.changed.wait(lock, done);
    return lock;
  };
  const auto post = [&](Inbox& to, std::vector<Matrix> copies) {
    std::lock_guard<std::mutex> lock(to.mutex);
    to.copies = std::move(copies);
    to.full = true;
    to.changed.notify_all();
  };
  const auto receive = [&](Inbox& from) {  // reads every float, frees the copies, then says so
    const auto lock = wait_for(from, true);
    float sum = 0;
    for (const auto& copy : from.copies) sum += copy.sum();
    volatile float sink = sum;  // the reads are observed: not optimised away
    static_cast<void>(sink);
    from.copies.clear();
    from.full = false;
    from.changed.notify_all();
  };
  std::vector<double> seconds(count);
  std::vector<std::exception_ptr> errors(count);
  const auto copier = [&](std::size_t i) {
    try {
      const Matrix source = Matrix::Constant(bytes / static_cast<std::int64_t>(sizeof(float)), 1, 1.0f);  // [floats x 1], its own
      std::vector<double> times;
      for (int r = 0; r <= repeats && !failed.load(); ++r) {  // the first round warms caches and allocations
        std::vector<Matrix> copies;
        copies.reserve(static_cast<std::size_t>(batch));
        wait_for(inboxes[(i + 1) % count], false);  // its previous copies are read and freed
        const auto begin = Clock::now();
        for (int k = 0; k < batch; ++k) copies.emplace_back(source);  // a new buffer each, as a transfer's
        if (r > 0) times.push_back(std::chrono::duration<double>(Clock::now() - begin).count() / batch);
        post(inboxes[(i + 1) % count], std::move(copies));
        receive(inboxes[i]);
      }
      if (!failed.load()) seconds[i] = median_of(std::move(times));
    } catch (...) {
      errors[i] = std::current_exception();
      failed = true;
      for (auto& inbox : inboxes) {  // no thread waits for this one
        std::lock_guard<std::mutex> lock(inbox.mutex);
        inbox.changed.notify_all();
      }
    }
  };
  std::vector<std::thread> others;
  for (std::size_t i = 1; i < count; ++i) others.emplace_back(copier, i);
  copier(0);
  for (auto& t : others) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return median_of(std::move(seconds));
}

namespace {

// The layer times and overhead for `concurrent` processors, as `timing` says (profile_cpu).
Calibration profile_cpu_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                               const std::function<void(const std::string&)>& progress, int concurrent,
                               const std::vector<int>& pin_cpus, double handoff_spin_s, ConcurrentTiming timing,
                               TransferThreads transfer_threads, bool unmarked_twins) {
  const Runner run = unmarked_twins ? with_unmarked_twins(run_cpu) : Runner(run_cpu);
  // What re-reading data costs by what was touched since, for the weight-reuse model
  // (schedule/weight_reuse.hpp); none where sysfs does not give the L2's size.
  std::vector<std::pair<std::int64_t, double>> reuse_curve;
  const std::int64_t l2_bytes = core_l2_bytes();
  if (l2_bytes >= 4096 && l2_bytes <= kMostReuseCurveCacheBytes) {
    if (progress) progress("measuring what re-reading data costs after sweeps up to 16 x the " + std::to_string(l2_bytes >> 10) + " KiB L2");
    reuse_curve = measure_reuse_curve(l2_bytes, kReuseCurveRepeats);
  } else if (progress) {
    progress(l2_bytes > 0 ? "no reuse curve: an L2 of " + std::to_string(l2_bytes >> 20) + " MiB is more than the curve measures"
                          : std::string("no reuse curve: this machine's L2 size is not in /sys/devices/system/cpu/cpu0/cache"));
  }
  // What a wait costs the work after it, waiting as this table's runs do (schedule/wait_loss.hpp).
  const double spin_s = handoff_spin_for(concurrent, handoff_spin_s, transfer_threads == TransferThreads::links);
  if (progress) progress("measuring what a wait of 1 to 50 ms costs the work after it, over " + std::to_string(kWaitCurveFootprintBytes >> 20) + " MiB");
  const WaitCurve wait_curve{measure_wait_curve(kWaitCurveFootprintBytes, kWaitCurveRepeats, spin_s), kWaitCurveFootprintBytes};
  if (concurrent > 1 && timing == ConcurrentTiming::pipeline) {
    TrainingOptions options;
    options.pin_cpus = pin_cpus;
    options.handoff_spin_s = handoff_spin_s;
    options.transfer_threads = transfer_threads;
    if (auto timed = profile_layers_in_pipeline(config, data, repeats, seed, run, progress, concurrent, options,
                                                kPipelineTimingSpan_s, reuse_curve, wait_curve, /*time_far_point=*/true)) {
      return *timed;
    }
    if (progress) progress("timing " + std::to_string(concurrent) + " copies at once instead");
  }
  // One processor: also what a larger footprint costs the layers (Calibration::footprint_slowdown).
  return profile_layers(config, data, repeats, seed, run, progress, concurrent, pin_cpus, /*time_footprint=*/true, reuse_curve,
                        wait_curve, kOneProcessorTimingSpan_s);
}

}  // namespace

Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress, int concurrent,
                        const std::vector<int>& pin_cpus, double handoff_spin_s, ConcurrentTiming timing,
                        TransferThreads transfer_threads, bool unmarked_twins) {
  Calibration calibration = profile_cpu_layers(config, data, repeats, seed, progress, concurrent, pin_cpus, handoff_spin_s,
                                               timing, transfer_threads, unmarked_twins);
  calibration.overheads_from_unmarked_twins = unmarked_twins;
  calibration.device = "cpu";
  calibration.device_name = (concurrent == 1 ? std::string("one CPU thread")
                             : calibration.pipeline_schedule.empty()
                                 ? "one of " + std::to_string(concurrent) + " CPU threads at once"
                                 : "CPU threads of a " + std::to_string(concurrent) + "-processor " +
                                       calibration.pipeline_schedule + " pipeline") +
                            " (" + kernel_libraries() + ", fp32)";
  if (progress) progress("measuring copy bandwidth and thread handoff latency");
  // The spin of the runs this table is for (P = concurrent in one process, senders copying).
  const double spin_s = handoff_spin_for(concurrent, handoff_spin_s, transfer_threads == TransferThreads::links);
  // From a cache's worth to more than a core's L2: a transfer of a few hundred KiB, its source
  // just written by its task, copies several times faster than an 8 MiB one, whose rate is the
  // table's copy bandwidth.
  for (const std::int64_t bytes : {std::int64_t{16} << 10, std::int64_t{128} << 10, std::int64_t{1} << 20, std::int64_t{8} << 20}) {
    calibration.copy_seconds.push_back({bytes, measure_copy_seconds(bytes, repeats, concurrent, spin_s)});
  }
  calibration.copy_bytes_per_s = static_cast<double>(calibration.copy_seconds.back().first) / calibration.copy_seconds.back().second;
  calibration.cores = usable_cpu_count();
  // producer -> link thread -> consumer, each waiting for about a task (spinning first as the
  // runs will); a sender that copies itself wakes the consumer alone
  calibration.handoff_spin_s = spin_s;
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
