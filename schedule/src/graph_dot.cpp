// Graphviz export: a cluster per processor with its tasks in order, transfers outside, and the
// dependency edges.
#include <sstream>

#include "pipetwin/schedule/graph_io.hpp"

namespace pipetwin {

std::string graph_to_dot(const TaskGraph& graph) {
  std::ostringstream out;
  out << "digraph \"" << graph.schedule << "\" {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n";
  const auto by_processor = tasks_by_processor(graph);
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    out << "  subgraph cluster_p" << p << " {\n    label=\"" << graph.processors[p].name << "\";\n";
    for (const auto id : by_processor[p]) {
      const Task& task = graph.tasks[id];
      out << "    t" << id << " [label=\"" << task_label(task) << "\\n" << task.cost_cycles
          << " cyc\"];\n";
    }
    out << "  }\n";
  }
  for (const auto& task : graph.tasks) {
    if (task.placement == Placement::link) {
      out << "  t" << task.id << " [shape=ellipse, label=\"" << task_label(task) << "\\n"
          << graph.links[task.resource].name << "\\n" << task.bytes << " B\"];\n";
    }
  }
  for (const auto& task : graph.tasks) {
    for (const auto& dep : task.deps) {
      out << "  t" << dep.task << " -> t" << task.id
          << (dep.carries == Carries::order ? " [style=dashed]" : std::string(" [label=\"") + to_string(dep.carries) + "\"]")
          << ";\n";
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace pipetwin
