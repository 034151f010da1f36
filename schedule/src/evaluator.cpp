// The analytic evaluator: earliest start of every task given its dependencies and the order of
// its resource. A processor, and an in-order link, runs one task at a time in its order; on a
// shared link transfers are pure delays (concurrent ones do not slow each other down here).
#include "pipetwin/schedule/evaluator.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

std::vector<TaskTiming> evaluate_times(const TaskGraph& g) {
  const std::string bounds = bounds_problem(g);
  if (!bounds.empty()) throw Error("cannot evaluate: " + bounds);
  const auto order = execution_order(g);  // throws on a deadlock
  std::vector<std::int32_t> previous_on_resource(g.tasks.size(), -1);
  for (const auto& list : tasks_by_processor(g)) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_resource[list[i]] = list[i - 1];
  }
  const auto by_link = tasks_by_link(g);
  for (std::size_t k = 0; k < by_link.size(); ++k) {
    if (g.links[k].policy != LinkPolicy::in_order) continue;
    for (std::size_t i = 1; i < by_link[k].size(); ++i) previous_on_resource[by_link[k][i]] = by_link[k][i - 1];
  }
  std::vector<TaskTiming> times(g.tasks.size());
  for (const auto id : order) {
    const Task& t = g.tasks[id];
    std::int64_t start = 0;
    for (const auto& dep : t.deps) start = std::max(start, times[dep.task].end_cycles);
    if (previous_on_resource[id] >= 0) {
      start = std::max(start, times[previous_on_resource[id]].end_cycles);
    }
    times[id] = {start, start + t.cost_cycles};
  }
  return times;
}

Result evaluate(const TaskGraph& g, bool record_memory_timeline) {
  return summarize(g, evaluate_times(g), "analytic", record_memory_timeline);
}

}  // namespace pipetwin
