// The processors' tasks of a run grouped by how long their processor had waited before each one
// started: its start less the end of the task it ran before there. validate's
// task_time_error_by_wait compares measured with predicted task times per group, since a task
// after a long wait can run slower than one that follows another at once (on a virtual machine a
// wait costs the core its caches: docs/executor.md, "Caches lost in a wait").
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

// The group of a wait of `wait_s` seconds: "wait < 0.5 ms", "wait 0.5-5 ms", "wait 5-20 ms" or
// "wait >= 20 ms" (a negative wait, overlapping timings, counts as none).
std::string wait_group_label(double wait_s);

// Per task of `graph`: the group of the wait before it in `run` (a timing per task of the same
// graph), its processor's tasks taken in the order of their start in `run`
// (waits_before_cycles, schedule/wait_loss.hpp); "" for link tasks and for each processor's first
// (nothing ran before it). Throws when `run` has not one timing per
// task.
std::vector<std::string> wait_groups(const TaskGraph& graph, const Result& run);

}  // namespace pipetwin::exec
