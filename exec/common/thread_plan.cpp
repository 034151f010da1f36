// Which thread runs each task: processors' threads, links' threads, or transfers on their
// senders' threads (thread_plan.hpp).
#include "thread_plan.hpp"

#include <algorithm>
#include <tuple>

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
  const std::vector<bool> by_sender = links_copied_by_senders(graph);
  std::vector<std::size_t> place(graph.tasks.size(), 0);  // a processor task's place in its order
  for (const auto& order : plan.processor_orders) {
    for (std::size_t i = 0; i < order.size(); ++i) place[static_cast<std::size_t>(order[i])] = i;
  }
  // Per processor: (place of the last task it reads there, link, place in the link) of each
  // transfer its thread copies.
  std::vector<std::vector<std::tuple<std::size_t, std::int32_t, std::size_t>>> taken(plan.processor_orders.size());
  const auto by_link = tasks_by_link(graph);
  for (std::size_t k = 0; k < by_link.size(); ++k) {
    if (!by_sender[k]) continue;
    plan.link_has_thread[k] = false;
    const std::int32_t sender = graph.links[k].src;
    for (std::size_t i = 0; i < by_link[k].size(); ++i) {
      const Task& t = graph.tasks[static_cast<std::size_t>(by_link[k][i])];
      std::size_t after = 0;
      for (const auto& d : t.deps) after = std::max(after, place[static_cast<std::size_t>(d.task)]);
      taken[static_cast<std::size_t>(sender)].emplace_back(after, static_cast<std::int32_t>(k), i);
      plan.runner[static_cast<std::size_t>(t.id)] = sender;
    }
  }
  for (std::size_t p = 0; p < taken.size(); ++p) {
    if (taken[p].empty()) continue;
    std::sort(taken[p].begin(), taken[p].end());
    const std::vector<std::int32_t> own = plan.processor_orders[p];
    std::vector<std::int32_t>& merged = plan.processor_orders[p];
    merged.clear();
    std::size_t next = 0;
    for (std::size_t i = 0; i < own.size(); ++i) {
      merged.push_back(own[i]);
      for (; next < taken[p].size() && std::get<0>(taken[p][next]) == i; ++next) {
        const auto& [after, k, j] = taken[p][next];
        merged.push_back(by_link[static_cast<std::size_t>(k)][j]);
      }
    }
  }
  return plan;
}

}  // namespace pipetwin::exec
