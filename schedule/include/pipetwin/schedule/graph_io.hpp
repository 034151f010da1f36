// Lossless JSON import/export of task graphs (export(import(text)) == text) and DOT export.
#pragma once
#include <string>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

std::string graph_to_json(const TaskGraph& graph);  // two-space indented, ends with a newline
TaskGraph graph_from_json(const std::string& text, const std::string& source);
TaskGraph load_graph(const std::string& file_path);

// Graphviz: one cluster per processor, transfers between them, dependency edges.
std::string graph_to_dot(const TaskGraph& graph);

}  // namespace pipetwin
