// The processors' tasks of a run grouped by how long their processor had waited before each one
// started: its start less the end of the task it ran before there. validate's
// task_time_error_by_wait compares measured with predicted task times per group, since a task
// after a long wait can run slower than one that follows another at once (on a virtual machine a
// wait costs the core its caches: docs/executor.md, "Caches lost in a wait").
#pragma once
#include <functional>
#include <map>
#include <string>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

// The group of a wait of `wait_s` seconds: "wait < 0.5 ms", "wait 0.5-5 ms", "wait 5-20 ms" or
// "wait >= 20 ms" (a negative wait, overlapping timings, counts as none).
std::string wait_bin_label(double wait_s);

// Per group: the summed cost_cycles of `costs`'s processor tasks that `counted` takes, each task
// in the group of the wait before it in `run` (a timing per task of the same graph; per
// processor, its tasks in the order of their start in `run`, the first of each processor left
// out: nothing ran before it). Throws when `run` has not one timing per task.
std::map<std::string, double> processor_cycles_by_wait(const TaskGraph& costs, const Result& run,
                                                       const std::function<bool(const Task&)>& counted);

}  // namespace pipetwin::exec
