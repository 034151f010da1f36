// The kinds of task a training schedule is made of (docs/design.md, "The task graph").
#pragma once
#include <string>

namespace pipetwin {

enum class TaskKind {
  F,    // forward
  B,    // fused backward (activation gradient + weight gradient)
  BA,   // activation (input) gradient
  BW,   // weight gradient
  U,    // weight update
  X,    // transfer over a link
  OFF,  // offload to host memory
  ON,   // reload from host memory
  RC,   // recompute
};

const char* to_string(TaskKind kind);
TaskKind task_kind_from_string(const std::string& text);  // throws on an unknown kind
bool is_backward(TaskKind kind);                            // B, BA or BW

}  // namespace pipetwin
