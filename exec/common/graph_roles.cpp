// Relations between tasks the IR implies but does not store (see graph_roles.hpp).
#include "graph_roles.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

bool is_link_task(const Task& task) { return task.placement == Placement::link; }

GraphRoles analyse_graph(const TaskGraph& graph, std::int32_t layer_count) {
  const auto n = graph.tasks.size();
  GraphRoles roles;
  roles.origin.resize(n);
  roles.dependents.resize(n);
  roles.update_of.assign(n, -1);
  roles.accumulate_in_place.assign(n, false);
  roles.part_index.assign(n, 0);
  roles.part_count.assign(n, 1);
  roles.carries_stash.assign(n, false);
  roles.newest_version.assign(static_cast<std::size_t>(layer_count), 0);
  for (const auto& t : graph.tasks) {
    if (t.first_layer >= layer_count || t.last_layer >= layer_count) {
      throw Error("graph task " + describe_task(graph, t) + " names a layer the network does not have");
    }
    for (const auto d : t.deps) roles.dependents[static_cast<std::size_t>(d)].push_back(t.id);
  }
  // Link tasks lead back, over their first dependency, to the compute task whose data they move.
  for (const auto& t : graph.tasks) {
    std::int32_t at = t.id;
    while (is_link_task(graph.tasks[static_cast<std::size_t>(at)])) {
      const Task& link = graph.tasks[static_cast<std::size_t>(at)];
      if (link.deps.empty()) throw Error("graph: " + describe_task(graph, link) + " moves data from nowhere (no dependency)");
      at = link.deps.front();
    }
    roles.origin[static_cast<std::size_t>(t.id)] = at;
  }
  // A link task out of a forward carries its stash unless it ends at another forward; OFF / ON
  // always carry the stash. Later hops first (a route's hops are created in order), so a hop
  // can look at the one after it.
  for (auto it = graph.tasks.rbegin(); it != graph.tasks.rend(); ++it) {
    const Task& t = *it;
    if (!is_link_task(t)) continue;
    if (t.kind != TaskKind::X) {
      roles.carries_stash[static_cast<std::size_t>(t.id)] = true;
      continue;
    }
    if (graph.tasks[static_cast<std::size_t>(roles.origin[static_cast<std::size_t>(t.id)])].kind != TaskKind::F) continue;
    bool to_forward = false;
    for (const auto d : roles.dependents[static_cast<std::size_t>(t.id)]) {
      const Task& next = graph.tasks[static_cast<std::size_t>(d)];
      to_forward = to_forward || next.kind == TaskKind::F || (is_link_task(next) && !roles.carries_stash[static_cast<std::size_t>(d)]);
    }
    roles.carries_stash[static_cast<std::size_t>(t.id)] = !to_forward;
  }
  // Weight gradients feed the update that depends on them, directly or over a transfer.
  for (const auto& u : graph.tasks) {
    if (u.kind != TaskKind::U) continue;
    for (const auto d : u.deps) {
      const std::int32_t source = roles.origin[static_cast<std::size_t>(d)];
      const Task& s = graph.tasks[static_cast<std::size_t>(source)];
      if (s.kind != TaskKind::B && s.kind != TaskKind::BW) continue;
      roles.update_of[static_cast<std::size_t>(source)] = u.id;
      roles.accumulate_in_place[static_cast<std::size_t>(source)] = source == d && s.resource == u.resource;
    }
  }
  // BA parts of one (layers, minibatch, microbatch), in id order; stash and version readers.
  std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t, std::int32_t>, std::vector<std::int32_t>> parts;
  for (const auto& t : graph.tasks) {
    if (is_link_task(t)) continue;
    if (t.kind == TaskKind::BA) parts[{t.first_layer, t.last_layer, t.minibatch, t.microbatch}].push_back(t.id);
    if (is_backward(t.kind)) ++roles.stash_readers[{t.first_layer, t.minibatch, t.microbatch}];
    if (t.stage >= 0 && t.version_read >= 0) {
      const StageInfo& stage = graph.stages.at(static_cast<std::size_t>(t.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++roles.version_readers[{l, t.version_read}];
    }
    if (t.kind == TaskKind::U) {
      const StageInfo& stage = graph.stages.at(static_cast<std::size_t>(t.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        auto& newest = roles.newest_version[static_cast<std::size_t>(l)];
        newest = std::max(newest, t.version_written);
      }
    }
  }
  for (const auto& [key, ids] : parts) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      roles.part_index[static_cast<std::size_t>(ids[i])] = static_cast<std::int32_t>(i);
      roles.part_count[static_cast<std::size_t>(ids[i])] = static_cast<std::int32_t>(ids.size());
    }
  }
  return roles;
}

}  // namespace pipetwin::exec
