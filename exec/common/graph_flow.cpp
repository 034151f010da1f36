// The executor's view of a graph's declared data flow (see graph_flow.hpp).
#include "graph_flow.hpp"

#include <algorithm>
#include <utility>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/buffers.hpp"
#include "pipetwin/schedule/gradient_assembly.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::exec {

GraphFlow read_graph_flow(const TaskGraph& graph, std::int32_t layer_count) {
  const auto n = graph.tasks.size();
  GraphFlow flow;
  flow.replicas = graph_replicas(graph);
  flow.layers = layer_count;
  if (flow.replicas < 1 || graph.stages.size() % static_cast<std::size_t>(flow.replicas) != 0) {
    throw Error("graph: " + std::to_string(graph.stages.size()) + " stages do not split into " +
                std::to_string(flow.replicas) + " data-parallel replicas");
  }
  flow.stages_per_replica = std::max<std::int32_t>(1, static_cast<std::int32_t>(graph.stages.size()) / flow.replicas);
  flow.output_readers.assign(n, 0);
  flow.accumulate_into.assign(n, -1);
  flow.sends_weight_gradient.assign(n, false);
  flow.sends_output_gradients.assign(n, false);
  flow.recomputed.assign(n, false);
  flow.newest_version.assign(static_cast<std::size_t>(layer_count), 0);
  for (const auto& t : graph.tasks) {
    if (t.first_layer >= layer_count || t.last_layer >= layer_count) {
      throw Error("graph task " + describe_task(graph, t) + " names a layer the network does not have");
    }
    for (const auto& d : t.deps) {
      const Task& source = graph.tasks[static_cast<std::size_t>(d.task)];
      const bool reads = reads_output(source, t, d);
      if (reads) ++flow.output_readers[static_cast<std::size_t>(d.task)];
      if (d.carries != Carries::order) ++flow.field_readers[{d.task, d.carries}];
      if (t.kind == TaskKind::RC && d.carries == Carries::stash) flow.recomputed[static_cast<std::size_t>(d.task)] = true;
      if (d.carries == Carries::output_gradients) flow.sends_output_gradients[static_cast<std::size_t>(d.task)] = true;
      if (source.collective >= 0 && t.kind == TaskKind::U) {  // an update waiting for an all-reduce
        auto& updates = flow.collective_updates[source.collective];
        if (std::find(updates.begin(), updates.end(), t.id) == updates.end()) updates.push_back(t.id);
      }
      if (t.collective >= 0) continue;  // a collective's step reads the gradients in place
      if (d.carries != Carries::weight_gradient || is_link_task(source)) continue;  // over a link: from the payload
      if (reads) {
        flow.sends_weight_gradient[static_cast<std::size_t>(d.task)] = true;
      } else {
        flow.accumulate_into[static_cast<std::size_t>(d.task)] = t.id;
      }
    }
  }
  // Stash and version readers, by the IR's rules: every backward task of a (first layer,
  // minibatch, microbatch) reads the stash its forward made; a task with a stage and a
  // version_read reads that version of every layer of its stage.
  for (const auto& t : graph.tasks) {
    if (is_link_task(t)) continue;
    if (is_backward(t.kind)) ++flow.stash_readers[flow.stash_key(t)];
    if (t.stage >= 0 && t.version_read >= 0) {
      const StageInfo& stage = graph.stages.at(static_cast<std::size_t>(t.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++flow.version_readers[{flow.layer_key(t, l), t.version_read}];
    }
    if (t.kind == TaskKind::U) {
      flow.version_writer[{t.stage, t.version_written}] = t.id;
      const StageInfo& stage = graph.stages.at(static_cast<std::size_t>(t.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        auto& newest = flow.newest_version[static_cast<std::size_t>(l)];
        newest = std::max(newest, t.version_written);
      }
    }
  }
  // Transfers of a backward's stash; to a BA part, hop by hop back from the part.
  flow.stash_transfer.assign(n, -1);
  flow.stash_without_input.assign(n, false);
  const auto transfer_of_stash = [&](const Dep* d) {
    return d != nullptr && d->carries == Carries::stash && graph.tasks[static_cast<std::size_t>(d->task)].kind == TaskKind::X;
  };
  for (const auto& t : graph.tasks) {
    if (is_link_task(t) || !is_backward(t.kind)) continue;
    const auto brought = std::find_if(t.deps.begin(), t.deps.end(), [&](const Dep& d) { return transfer_of_stash(&d); });
    if (brought == t.deps.end()) continue;
    flow.stash_transfer[static_cast<std::size_t>(t.id)] = brought->task;
    if (t.kind != TaskKind::BA) continue;
    for (const Dep* hop = &*brought; transfer_of_stash(hop);
         hop = data_dependency(graph.tasks[static_cast<std::size_t>(hop->task)])) {
      flow.stash_without_input[static_cast<std::size_t>(hop->task)] = true;
    }
  }
  GradientAssemblies assemblies = gradient_assemblies(graph, layer_count);
  flow.assembly_group = std::move(assemblies.group);
  flow.assembly_readers = std::move(assemblies.group_tasks);
  flow.assembles = std::move(assemblies.assembles);
  for (auto& [collective, updates] : flow.collective_updates) {  // rank order: the sum's order everywhere
    std::sort(updates.begin(), updates.end(), [&](std::int32_t a, std::int32_t b) {
      return graph.tasks[static_cast<std::size_t>(a)].resource < graph.tasks[static_cast<std::size_t>(b)].resource;
    });
  }
  return flow;
}

const Dep& the_dep(const TaskGraph& graph, const Task& task, Carries what) {
  const Dep* found = nullptr;
  for (const auto& d : task.deps) {
    if (d.carries != what) continue;
    if (found != nullptr) {
      throw Error("schedule error: " + describe_task(graph, task) + " has several dependencies carrying " + to_string(what));
    }
    found = &d;
  }
  if (found == nullptr) {
    throw Error("schedule error: " + describe_task(graph, task) + " has no dependency carrying " + to_string(what));
  }
  return *found;
}

}  // namespace pipetwin::exec
