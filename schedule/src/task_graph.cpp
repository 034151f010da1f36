// Names, labels and per-resource views of the task-graph IR.
#include "pipetwin/schedule/task_graph.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {

const char* to_string(Placement placement) {
  return placement == Placement::processor ? "processor" : "link";
}

const char* to_string(WeightSemantics semantics) {
  switch (semantics) {
    case WeightSemantics::synchronous: return "synchronous";
    case WeightSemantics::stashed: return "stashed";
    case WeightSemantics::stale: return "stale";
    case WeightSemantics::double_buffered: return "double-buffered";
    case WeightSemantics::delayed: return "delayed";
  }
  return "?";
}

WeightSemantics weight_semantics_from_string(const std::string& text) {
  if (text == "synchronous") return WeightSemantics::synchronous;
  if (text == "stashed") return WeightSemantics::stashed;
  if (text == "stale") return WeightSemantics::stale;
  if (text == "double-buffered") return WeightSemantics::double_buffered;
  if (text == "delayed") return WeightSemantics::delayed;
  throw Error(unknown_name_message("weight semantics", text,
                                   {"synchronous", "stashed", "stale", "double-buffered", "delayed"}));
}

const char* to_string(Carries carries) {
  switch (carries) {
    case Carries::order: return "order";
    case Carries::activation: return "activation";
    case Carries::activation_gradient: return "activation-gradient";
    case Carries::output_gradients: return "output-gradients";
    case Carries::stash: return "stash";
    case Carries::weights: return "weights";
    case Carries::weight_gradient: return "weight-gradient";
  }
  return "?";
}

Carries carries_from_string(const std::string& text) {
  for (const Carries c : {Carries::order, Carries::activation, Carries::activation_gradient, Carries::output_gradients,
                          Carries::stash, Carries::weights, Carries::weight_gradient}) {
    if (text == to_string(c)) return c;
  }
  throw Error(unknown_name_message("dependency kind", text,
                                   {"order", "activation", "activation-gradient", "output-gradients", "stash",
                                    "weights", "weight-gradient"}));
}

namespace {
constexpr BufferKind kBufferKinds[] = {BufferKind::resident,   BufferKind::weights, BufferKind::gradient_sum,
                                       BufferKind::stash,      BufferKind::kept_input, BufferKind::output,
                                       BufferKind::optimizer_state};
}  // namespace

const char* to_string(BufferKind kind) {
  switch (kind) {
    case BufferKind::resident: return "resident";
    case BufferKind::weights: return "weights";
    case BufferKind::gradient_sum: return "gradient-sum";
    case BufferKind::stash: return "stash";
    case BufferKind::kept_input: return "kept-input";
    case BufferKind::output: return "output";
    case BufferKind::optimizer_state: return "optimizer-state";
  }
  return "?";
}

BufferKind buffer_kind_from_string(const std::string& text) {
  std::vector<std::string> names;
  for (const BufferKind k : kBufferKinds) {
    if (text == to_string(k)) return k;
    names.emplace_back(to_string(k));
  }
  throw Error(unknown_name_message("buffer kind", text, names));
}

std::vector<std::int32_t> dep_ids(const Task& task) {
  std::vector<std::int32_t> ids;
  ids.reserve(task.deps.size());
  for (const auto& d : task.deps) ids.push_back(d.task);
  return ids;
}

const Dep* data_dependency(const Task& task) {
  for (const auto& d : task.deps) {
    if (d.carries != Carries::order) return &d;
  }
  return nullptr;
}

std::string task_label(const Task& task) {
  std::string label = std::string(to_string(task.kind)) + "(";
  std::string sep;
  if (task.minibatch >= 0) {
    label += "k" + std::to_string(task.minibatch);
    sep = ",";
  }
  if (task.microbatch >= 0) {
    label += sep + "m" + std::to_string(task.microbatch);
    sep = ",";
  }
  if (task.stage >= 0) label += sep + "s" + std::to_string(task.stage);
  return label + ")";
}

std::string describe_task(const TaskGraph& graph, const Task& task) {
  std::string where;
  if (task.placement == Placement::processor) {
    where = task.resource >= 0 && task.resource < graph.processor_count()
                ? graph.processors[task.resource].name
                : "processor " + std::to_string(task.resource);
  } else {
    where = task.resource >= 0 && task.resource < static_cast<int>(graph.links.size())
                ? "link " + graph.links[task.resource].name
                : "link " + std::to_string(task.resource);
  }
  return "task " + std::to_string(task.id) + " " + task_label(task) + " on " + where;
}

namespace {

std::vector<std::vector<std::int32_t>> tasks_by(const TaskGraph& graph, Placement placement,
                                                std::size_t count) {
  std::vector<std::vector<std::int32_t>> lists(count);
  for (const auto& task : graph.tasks) {
    if (task.placement != placement) continue;
    if (task.resource < 0 || static_cast<std::size_t>(task.resource) >= count) {
      throw Error(describe_task(graph, task) + ": placed on a " + to_string(placement) +
                  " that does not exist (the graph has " + std::to_string(count) + ")");
    }
    lists[task.resource].push_back(task.id);
  }
  for (std::size_t r = 0; r < count; ++r) {
    auto& list = lists[r];
    std::vector<std::int32_t> ordered(list.size(), -1);
    for (const auto id : list) {
      const auto order = graph.tasks[id].order;
      if (order < 0 || static_cast<std::size_t>(order) >= list.size() || ordered[order] != -1) {
        throw Error(describe_task(graph, graph.tasks[id]) + ": order " + std::to_string(order) +
                    " is out of range or taken; the orders on a resource must be 0.." +
                    std::to_string(list.size() - 1) + ", each once");
      }
      ordered[order] = id;
    }
    list = std::move(ordered);
  }
  return lists;
}

}  // namespace

std::vector<std::vector<std::int32_t>> tasks_by_processor(const TaskGraph& graph) {
  return tasks_by(graph, Placement::processor, graph.processors.size());
}

std::vector<std::vector<std::int32_t>> tasks_by_link(const TaskGraph& graph) {
  return tasks_by(graph, Placement::link, graph.links.size());
}

}  // namespace pipetwin
