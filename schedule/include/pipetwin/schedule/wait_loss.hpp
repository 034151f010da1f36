// What a wait costs the task after it: a processor that waited (idle between two of its tasks)
// may have lost what its caches held, and its next task refills them (docs/design.md, "Waits").
// A graph carries the measured curve (TaskGraph::wait_loss) and, per processor task, the bytes it
// touches (Task::wait_exposed_bytes); both engines charge the task at its start, from the wait
// they simulated before it.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// The distinct bytes a task's work on `layer` reads and writes, for a task of `samples` samples
// (each layer's part of Task::wait_exposed_bytes): a forward its weights and output, and its input
// at its first layer; a backward (B, BA) its weights, its stash and the gradient it writes at its
// input, and the gradient it received at the last layer (the first it runs); a BW the gradient
// sum it adds into, its stash and the received gradient; an update its weights and their
// gradient sum. 0 for layers outside the task and for transfers.
std::int64_t layer_wait_exposed_bytes(const Task& task, const Network& network, std::int32_t layer, std::int64_t samples);

// layer_wait_exposed_bytes summed over the task's layers (its samples: the graph's microbatch, a
// BA part's share of it).
std::int64_t task_wait_exposed_bytes(const TaskGraph& graph, const Task& task, const Network& network);

// Extra cycles for `task` after its processor waited `wait_cycles`: TaskGraph::wait_loss at that
// wait times the task's wait_exposed_bytes, rounded; 0 without a curve, without bytes or for no
// wait.
std::int64_t wait_loss_cycles(const TaskGraph& graph, const Task& task, std::int64_t wait_cycles);

// What waits_before_cycles gives a task before which its processor ran nothing.
inline constexpr std::int64_t kNoWait = std::numeric_limits<std::int64_t>::min();

// Per task of `graph`: the cycles its processor waited before it in `times` (one timing per task,
// an engine's or a measured run's): its start less the end of the task it ran before there, its
// processor's tasks taken in the order of their start in `times` (below 0 where timings overlap);
// kNoWait for link tasks and for each processor's first. Throws when `times` has not one timing
// per task.
std::vector<std::int64_t> waits_before_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// Per task of `graph`: wait_loss_cycles for the wait before it in `times` (0 where none).
std::vector<std::int64_t> wait_charges_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// Gives the graph the hardware's calibrated wait curve (in its cycles) and every processor task
// its wait_exposed_bytes: task_wait_exposed_bytes, at most the curve's footprint
// (Calibration::wait_charged_bytes). Nothing without a calibration that has a wait curve.
void price_waits(TaskGraph& graph, const HardwareProfile& hardware, const Network& network);

}  // namespace pipetwin
