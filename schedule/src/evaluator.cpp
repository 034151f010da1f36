// The analytic evaluator: earliest start of every task given its dependencies and the order of
// its resource. A processor, and an in-order link, runs one task at a time in its order; on a
// shared link transfers are pure delays (concurrent ones do not slow each other down here). An
// in-order link with a wake and a delivery part (LinkInfo) is free again `delivery_cycles` before
// its transfer ends, and a transfer it did not wait for (ready by then) skips `wake_cycles`. A
// processor task that starts after its processor waited takes the graph's wait loss on top of
// its cost (wait_loss.hpp).
#include "pipetwin/schedule/evaluator.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/wait_loss.hpp"

namespace pipetwin {

std::vector<TaskTiming> evaluate_times(const TaskGraph& g) {
  const std::string bounds = bounds_problem(g);
  if (!bounds.empty()) throw Error("cannot evaluate: " + bounds);
  const auto order = execution_order(g);  // throws on a deadlock
  std::vector<std::int32_t> previous_on_resource(g.tasks.size(), -1);
  for (const auto& list : tasks_by_processor(g)) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_resource[list[i]] = list[i - 1];
  }
  std::vector<bool> on_in_order_link(g.tasks.size(), false);
  const auto by_link = tasks_by_link(g);
  for (std::size_t k = 0; k < by_link.size(); ++k) {
    if (g.links[k].policy != LinkPolicy::in_order) continue;
    for (std::size_t i = 0; i < by_link[k].size(); ++i) {
      on_in_order_link[by_link[k][i]] = true;
      if (i > 0) previous_on_resource[by_link[k][i]] = by_link[k][i - 1];
    }
  }
  std::vector<TaskTiming> times(g.tasks.size());
  std::vector<std::int64_t> frees(g.tasks.size(), 0);  // when the task's resource could take the next
  for (const auto id : order) {
    const Task& t = g.tasks[id];
    std::int64_t ready = 0;
    for (const auto& dep : t.deps) ready = std::max(ready, times[dep.task].end_cycles);
    const std::int32_t previous = previous_on_resource[id];
    const std::int64_t start = previous >= 0 ? std::max(ready, frees[previous]) : ready;
    if (!on_in_order_link[id]) {
      // A processor task after its processor waited pays for what the wait cost its caches.
      const std::int64_t waited = t.placement == Placement::processor && previous >= 0 ? start - frees[previous] : 0;
      times[id] = {start, start + t.cost_cycles + wait_loss_cycles(g, t, waited)};
      frees[id] = times[id].end_cycles;
      continue;
    }
    const LinkInfo& link = g.links[static_cast<std::size_t>(t.resource)];
    const bool queued = previous >= 0 && ready <= frees[previous];  // its thread went on without a wait
    const std::int64_t cycles = std::max<std::int64_t>(0, t.cost_cycles - (queued ? link.wake_cycles : 0));
    times[id] = {start, start + cycles};
    frees[id] = start + std::max<std::int64_t>(0, cycles - link.delivery_cycles);
  }
  return times;
}

Result evaluate(const TaskGraph& g, bool record_memory_timeline) {
  return summarize(g, evaluate_times(g), "analytic", record_memory_timeline);
}

}  // namespace pipetwin
