// Names of task kinds and link policies, as they appear in JSON, DOT and tables.
#include "pipetwin/models/task_kind.hpp"

#include "pipetwin/models/link_policy.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {
namespace {
const char* const kNames[] = {"F", "B", "BA", "BW", "U", "X", "OFF", "ON", "RC"};
}

const char* to_string(TaskKind kind) { return kNames[static_cast<int>(kind)]; }

TaskKind task_kind_from_string(const std::string& text) {
  for (int i = 0; i < 9; ++i) {
    if (text == kNames[i]) return static_cast<TaskKind>(i);
  }
  throw Error(unknown_name_message("task kind", text,
                                   {"F", "B", "BA", "BW", "U", "X", "OFF", "ON", "RC"}));
}

bool is_backward(TaskKind kind) {
  return kind == TaskKind::B || kind == TaskKind::BA || kind == TaskKind::BW;
}

const char* to_string(LinkPolicy policy) { return policy == LinkPolicy::in_order ? "in-order" : "shared"; }

LinkPolicy link_policy_from_string(const std::string& text) {
  if (text == "in-order") return LinkPolicy::in_order;
  if (text == "shared") return LinkPolicy::shared;
  throw Error(unknown_name_message("link policy", text, {"in-order", "shared"}));
}

}  // namespace pipetwin
