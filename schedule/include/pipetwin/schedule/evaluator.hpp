// The analytic evaluator: start and end of every task from its dependencies and its processor's
// order; transfers are contention-free delays. The oracle the SystemC simulator must equal where
// nothing contends, and the fast path for large sweeps.
#pragma once
#include <nlohmann/json.hpp>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

Result evaluate(const TaskGraph& graph);

// Steady-state cycles per minibatch from task end times (shared by every engine). Synchronous
// schedules flush: the mean spacing of minibatch completions over the second half of the run
// (the total time when there is one minibatch). Asynchronous schedules stream: the mean spacing
// of microbatch completions between the warm-up and the cool-down (the first and last S
// microbatches, S stages), times the microbatches per minibatch; the whole stream if it is
// too short for that.
double steady_state_iteration_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// Peak live bytes per processor from the tasks' memory effects (frees before allocations at
// the same cycle), static bytes included.
std::vector<std::int64_t> peak_memory(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// The summary keys of `pipetwin evaluate --json` (per-task times under "task_times" when asked).
nlohmann::ordered_json result_to_json(const TaskGraph& graph, const Result& result,
                                      bool with_task_times);

}  // namespace pipetwin
