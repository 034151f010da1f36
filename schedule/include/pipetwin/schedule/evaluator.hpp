// The analytic evaluator: start and end of every task from its dependencies and the order of its
// processor or in-order link; transfers on shared links are contention-free delays. The oracle
// the SystemC simulator must equal where no bandwidth is shared, and the fast path for sweeps.
#pragma once
#include "pipetwin/schedule/summary.hpp"

namespace pipetwin {

// Task times only (throws Error on a deadlock).
std::vector<TaskTiming> evaluate_times(const TaskGraph& graph);
Result evaluate(const TaskGraph& graph, bool record_memory_timeline = false);

}  // namespace pipetwin
