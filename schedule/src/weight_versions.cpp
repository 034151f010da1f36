// The weight-version rule (see weight_versions.hpp), written once.
#include "pipetwin/schedule/weight_versions.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace pipetwin {

WeightVersions weight_version_rule(const TaskGraph& g) {
  const auto n = g.tasks.size();
  WeightVersions v{std::vector<std::int32_t>(n, -1), std::vector<std::int32_t>(n, -1),
                   std::vector<std::int32_t>(n, 0)};
  std::vector<std::int32_t> current(g.stages.size(), 0);
  for (const auto& list : tasks_by_processor(g)) {
    for (const auto id : list) {
      const Task& t = g.tasks[id];
      if (t.stage < 0 || t.stage >= static_cast<std::int32_t>(g.stages.size())) continue;
      v.newest[id] = current[t.stage];
      if (t.kind == TaskKind::U) ++current[t.stage];
    }
  }
  std::map<std::tuple<int, int, int>, std::int32_t> forward;  // (stage, minibatch, microbatch) -> F
  for (const auto& t : g.tasks) {
    if (t.stage < 0 || t.stage >= static_cast<std::int32_t>(g.stages.size()) || t.placement != Placement::processor) continue;
    const std::int32_t newest = v.newest[t.id];
    if (t.kind == TaskKind::U) {
      v.read[t.id] = newest;
      v.written[t.id] = newest + 1;
    } else if (t.kind == TaskKind::F) {
      if (g.semantics == WeightSemantics::delayed) {
        const std::int32_t position = t.minibatch * g.microbatches + t.microbatch;
        v.read[t.id] = std::max(0, position - g.stages[t.stage].weight_delay);
      } else if (g.semantics == WeightSemantics::double_buffered) {
        v.read[t.id] = std::max(0, t.minibatch - 1);
      } else {
        v.read[t.id] = newest;
      }
      forward[{t.stage, t.minibatch, t.microbatch}] = t.id;
    }
  }
  for (const auto& t : g.tasks) {
    const bool recomputes = t.kind == TaskKind::RC;
    if ((!is_backward(t.kind) && !recomputes) || t.stage < 0 || t.stage >= static_cast<std::int32_t>(g.stages.size())) continue;
    if (g.semantics == WeightSemantics::stale && !recomputes) {
      v.read[t.id] = v.newest[t.id];
    } else {
      const auto f = forward.find({t.stage, t.minibatch, t.microbatch});
      v.read[t.id] = f == forward.end() ? -1 : v.read[f->second];
    }
  }
  return v;
}

void assign_weight_versions(TaskGraph& g) {
  const WeightVersions v = weight_version_rule(g);
  for (auto& t : g.tasks) {
    if (t.placement != Placement::processor) continue;
    t.version_read = v.read[t.id];
    t.version_written = v.written[t.id];
  }
}

}  // namespace pipetwin
