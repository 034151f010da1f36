// Calibration on the CPU (DESIGN.md §6): every task kind of every layer timed by the executor on
// one processor, the executor's own cost per task, and the copy bandwidth its transfers reach.
// Also test-set accuracy of trained weights.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/models/calibration.hpp"

namespace pipetwin::cpu {

// The calibration table from a measured run of `graph` on one processor whose compute tasks each
// cover one layer (layerpipe with P = 1 and ba_parts = 1 is such a graph): per layer and task
// kind, the median measured time. Task overhead and copy bandwidth are left to the two below.
Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const Result& measured);

// Bytes per second of the copies the executor's transfers make (a large matrix copy, median).
double measure_copy_bytes_per_s(int repeats);

// Seconds from one thread ending a task to another thread starting the task waiting on it (the
// median of many mutex / condition-variable handoffs): what each hop of a transfer costs beyond
// its copy.
double measure_handoff_s(int repeats);

// The executor's own cost per compute task: runs `graph` (one processor, calibrated without
// overhead) and returns the median of (measured - calibrated) over its compute tasks, at least 0.
double measure_task_overhead_s(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                               const Calibration& calibration);

struct Accuracy {
  double loss = 0;      // mean over the samples
  double accuracy = 0;  // fraction classified correctly
};
// Batch norm uses each evaluation batch's own statistics (the executor keeps no running means).
Accuracy evaluate_accuracy(const Network& network, const std::vector<Vector>& weights, const Dataset& data,
                           std::int64_t batch = 500);

}  // namespace pipetwin::cpu
