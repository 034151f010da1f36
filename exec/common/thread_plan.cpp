// Which thread runs each task: processors' threads, links' threads, or transfers on their
// senders' threads (thread_plan.hpp).
#include "thread_plan.hpp"

#include <utility>

#include "pipetwin/schedule/copies_on_cores.hpp"

namespace pipetwin::exec {

ThreadPlan plan_threads(const TaskGraph& graph, bool copies_on_senders) {
  ThreadPlan plan;
  plan.processor_orders = tasks_by_processor(graph);
  const auto processors = static_cast<std::int32_t>(plan.processor_orders.size());
  plan.link_has_thread.assign(graph.links.size(), true);
  plan.runner.assign(graph.tasks.size(), -1);
  for (const auto& t : graph.tasks) {
    plan.runner[static_cast<std::size_t>(t.id)] = t.placement == Placement::link ? processors + t.resource : t.resource;
  }
  if (!copies_on_senders) return plan;
  // Per processor task: the transfers its thread copies right after it, in link and link order.
  const std::vector<std::int32_t> after = copied_after(graph);
  std::vector<std::vector<std::int32_t>> following(graph.tasks.size());
  for (const auto& transfers : tasks_by_link(graph)) {
    for (const auto id : transfers) {
      const std::int32_t last = after[static_cast<std::size_t>(id)];
      if (last < 0) continue;
      const Task& t = graph.tasks[static_cast<std::size_t>(id)];
      following[static_cast<std::size_t>(last)].push_back(id);
      plan.link_has_thread[static_cast<std::size_t>(t.resource)] = false;
      plan.runner[static_cast<std::size_t>(id)] = graph.tasks[static_cast<std::size_t>(last)].resource;
    }
  }
  for (auto& order : plan.processor_orders) {
    std::vector<std::int32_t> merged;
    for (const auto id : order) {
      merged.push_back(id);
      const auto& copies = following[static_cast<std::size_t>(id)];
      merged.insert(merged.end(), copies.begin(), copies.end());
    }
    order = std::move(merged);
  }
  return plan;
}

bool ThreadPlan::runs_link_threads(const TaskGraph& graph) const {
  for (const auto& t : graph.tasks) {
    if (t.placement == Placement::link && link_has_thread[static_cast<std::size_t>(t.resource)]) return true;
  }
  return false;
}

}  // namespace pipetwin::exec
