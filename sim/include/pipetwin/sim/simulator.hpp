// The SystemC simulator: predicts a Result for a task graph with a cycle-level model of its
// processors and links (DESIGN.md §5). Processors run their tasks in schedule order; transfers
// that share a link medium divide its bandwidth, so contention shows. Where nothing contends the
// result equals the analytic evaluator's cycle for cycle.
//
// SystemC's kernel is global to a process: every call runs in the one kernel, spawning dynamic
// processes for the run and killing them after it, so a process may call simulate() any number
// of times (same input, same output). Not thread-safe: run parallel sweeps in processes.
#pragma once
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct SimOptions {
  bool record_memory_timeline = false;  // Result::memory_timeline (for traces)
};

// Task times only; throws Error listing the blocked tasks when the graph cannot finish.
std::vector<TaskTiming> simulate_times(const TaskGraph& graph);
Result simulate(const TaskGraph& graph, const SimOptions& options = {});

}  // namespace pipetwin
