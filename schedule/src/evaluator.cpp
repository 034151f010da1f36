// The analytic evaluator: earliest start of every task given its dependencies and its
// processor's order; transfers are pure delays (no contention).
#include "pipetwin/schedule/evaluator.hpp"

#include <algorithm>

#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

std::vector<TaskTiming> evaluate_times(const TaskGraph& g) {
  const auto order = execution_order(g);  // throws on a deadlock
  std::vector<std::int32_t> previous_on_processor(g.tasks.size(), -1);
  for (const auto& list : tasks_by_processor(g)) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_processor[list[i]] = list[i - 1];
  }
  std::vector<TaskTiming> times(g.tasks.size());
  for (const auto id : order) {
    const Task& t = g.tasks[id];
    std::int64_t start = 0;
    for (const auto dep : t.deps) start = std::max(start, times[dep].end_cycles);
    if (previous_on_processor[id] >= 0) {
      start = std::max(start, times[previous_on_processor[id]].end_cycles);
    }
    times[id] = {start, start + t.cost_cycles};
  }
  return times;
}

Result evaluate(const TaskGraph& g, bool record_memory_timeline) {
  return summarize(g, evaluate_times(g), "analytic", record_memory_timeline);
}

}  // namespace pipetwin
