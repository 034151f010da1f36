// Calibration on the CPU (docs/design.md, "Executors"): every task kind of every layer timed by the executor on
// one processor, the executor's own cost per task, and the copy bandwidth its transfers reach.
// Also test-set accuracy of trained weights.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cpu {

// The upper median (the middle value; of two middles, the larger), 0 when empty.
double median_of(std::vector<double> values);

// The calibration table from a run recorded with `record_layer_times` (one processor): per layer
// and task kind the median measured time, and per task the median of what it took beyond its
// layers (task_overhead_s); the first `skip_minibatches` minibatches are left out as warm-up.
// Copy bandwidth and latency are left to the measurements below.
Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const TrainingRun& run,
                                 std::int32_t skip_minibatches);

// Bytes per second of the copies the executor's transfers make (a large matrix copy, median).
double measure_copy_bytes_per_s(int repeats);

// Seconds from one thread ending a task to another thread starting the task waiting on it (the
// median of many mutex / condition-variable handoffs): what each hop of a transfer costs beyond
// its copy.
double measure_handoff_s(int repeats);

// Layer times and task overhead of `config`'s network from a one-processor sequential run of
// about `repeats` microbatches (one warm-up minibatch more) by `run`; device, copy bandwidth and
// latency are left for the caller.
Calibration profile_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                           const Runner& run, const std::function<void(const std::string&)>& progress);

// The whole calibration of `config`'s network on the CPU: layer times and task overhead from a
// one-processor sequential run of about `repeats` microbatches (one warm-up minibatch more), then
// copy bandwidth and latency. `progress` gets a line per phase (may be empty).
Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress);

struct Accuracy {
  double loss = 0;      // mean over the samples
  double accuracy = 0;  // fraction classified correctly
};
// Batch norm uses each evaluation batch's own statistics (the executor keeps no running means).
Accuracy evaluate_accuracy(const Network& network, const std::vector<Vector>& weights, const Dataset& data,
                           std::int64_t batch = 500);

}  // namespace pipetwin::cpu
