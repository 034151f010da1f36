// The analytic evaluator: start and end of every task from its dependencies and its processor's
// order; transfers are contention-free delays. The oracle the SystemC simulator must equal where
// nothing contends, and the fast path for large sweeps.
#pragma once
#include "pipetwin/schedule/summary.hpp"

namespace pipetwin {

// Task times only (throws Error on a deadlock).
std::vector<TaskTiming> evaluate_times(const TaskGraph& graph);
Result evaluate(const TaskGraph& graph, bool record_memory_timeline = false);

}  // namespace pipetwin
