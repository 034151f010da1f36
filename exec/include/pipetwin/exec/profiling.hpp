// Calibration from any executor (docs/design.md, "Executors"): every task kind of every layer
// timed by the executor on one processor inside a real run, and the executor's own cost per
// task. The CPU and CUDA profilers add what their copies cost.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

// The upper median (the middle value; of two middles, the larger), 0 when empty.
double median_of(std::vector<double> values);

// The calibration table from a run recorded with `record_layer_times` (one processor): per layer
// and task kind the median measured time, and per task the median of what it took beyond its
// layers (task_overhead_s); the first `skip_minibatches` minibatches are left out as warm-up.
// Device, copy bandwidth and latency are left to the caller.
Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const TrainingRun& run,
                                 std::int32_t skip_minibatches);

// Seconds from one thread ending a task to another thread starting the task waiting on it (the
// median of many mutex / condition-variable handoffs): what each hop of a transfer costs beyond
// its copy.
double measure_handoff_s(int repeats);

// Layer times and task overhead of `config`'s network from a one-processor sequential run of
// about `repeats` microbatches (one warm-up minibatch more) by `run`; device, copy bandwidth and
// latency are left for the caller.
Calibration profile_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                           const Runner& run, const std::function<void(const std::string&)>& progress);

}  // namespace pipetwin
