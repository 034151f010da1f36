// Task-graph checks with messages that say what is wrong and where.
#include "pipetwin/schedule/validator.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

// References, placements, orders: later checks need these to hold.
void check_structure(const TaskGraph& g, std::vector<std::string>& problems) {
  const auto task_count = static_cast<std::int32_t>(g.tasks.size());
  if (g.processors.empty()) problems.push_back("the graph has no processors");
  if (g.microbatches < 1) problems.push_back("microbatches must be at least 1");
  if (g.minibatches < 1) problems.push_back("minibatches must be at least 1");
  for (std::size_t i = 0; i < g.links.size(); ++i) {
    const auto& link = g.links[i];
    auto known = [&](std::int32_t end) { return end == kHost || (end >= 0 && end < g.processor_count()); };
    if (!known(link.src) || !known(link.dst) || (link.src == kHost && link.dst == kHost)) {
      problems.push_back("link " + link.name + " connects an unknown processor");
    }
    if (!(link.bytes_per_cycle > 0)) problems.push_back("link " + link.name + ": bytes_per_cycle must be positive");
  }
  for (std::size_t s = 0; s < g.stages.size(); ++s) {
    const StageInfo& stage = g.stages[s];
    if (stage.processor < 0 || stage.processor >= g.processor_count() ||
        stage.forward_processor < -1 || stage.forward_processor >= g.processor_count()) {
      problems.push_back("stage " + std::to_string(s) + " is on unknown processor " +
                         std::to_string(stage.processor < 0 || stage.processor >= g.processor_count()
                                            ? stage.processor : stage.forward_processor));
    }
    if (stage.weight_delay < 0) problems.push_back("stage " + std::to_string(s) + ": negative weight_delay");
  }
  for (std::int32_t i = 0; i < task_count; ++i) {
    const Task& t = g.tasks[i];
    // Describing a task costs a string; only problems need one.
    const auto who = [&] { return describe_task(g, t); };
    if (t.id != i) problems.push_back(who() + ": id must equal its index " + std::to_string(i));
    const bool on_link = t.kind == TaskKind::X || t.kind == TaskKind::OFF || t.kind == TaskKind::ON;
    if (on_link != (t.placement == Placement::link)) {
      problems.push_back(who() + ": " + (on_link ? "a transfer, offload or reload must be placed on a link"
                                               : "only transfers, offloads and reloads may be placed on a link"));
    }
    const auto resources = t.placement == Placement::processor
                               ? g.processor_count()
                               : static_cast<std::int32_t>(g.links.size());
    if (t.resource < 0 || t.resource >= resources) {
      problems.push_back(who() + ": unknown " + to_string(t.placement) + " " +
                         std::to_string(t.resource) + " (the graph has " +
                         std::to_string(resources) + ")");
    }
    if (t.cost_cycles < 0) problems.push_back(who() + ": negative cost");
    if (t.memory_cycles < 0 || t.memory_cycles > t.cost_cycles) {
      problems.push_back(who() + ": memory_cycles must be between 0 and cost_cycles");
    }
    if (t.alloc_bytes < 0 || t.free_bytes < 0) problems.push_back(who() + ": negative memory effect");
    if (t.placement == Placement::link && t.resource >= 0 &&
        t.resource < static_cast<std::int32_t>(g.links.size())) {
      const LinkInfo& link = g.links[t.resource];
      if (t.kind == TaskKind::OFF && link.dst != kHost) problems.push_back(who() + ": an offload must go over a link to host memory");
      if (t.kind == TaskKind::ON && link.src != kHost) problems.push_back(who() + ": a reload must come over a link from host memory");
      if (t.kind == TaskKind::X && (link.src == kHost || link.dst == kHost)) {
        problems.push_back(who() + ": a transfer between processors cannot use a host link");
      }
      if (t.kind == TaskKind::X && (t.alloc_bytes != 0 || t.free_bytes != 0)) {
        problems.push_back(who() + ": a transfer between processors has no memory effect");
      }
    }
    if (t.stage >= static_cast<std::int32_t>(g.stages.size())) {
      problems.push_back(who() + ": unknown stage " + std::to_string(t.stage));
    }
    if (t.minibatch >= g.minibatches || t.microbatch >= g.microbatches) {
      problems.push_back(who() + ": minibatch or microbatch out of range");
    }
    for (const auto dep : t.deps) {
      if (dep < 0 || dep >= task_count) {
        problems.push_back(who() + ": depends on task " + std::to_string(dep) + ", which does not exist");
      } else if (dep == i) {
        problems.push_back(who() + ": depends on itself");
      }
    }
  }
  if (!problems.empty()) return;
  try {
    tasks_by_processor(g);
    tasks_by_link(g);
  } catch (const Error& error) {
    problems.push_back(error.what());
  }
}

// Forward before backward: a backward task must be reached from a forward of the same
// microbatch and overlapping layers through dependencies among that microbatch's tasks.
void check_forward_before_backward(const TaskGraph& g, std::vector<std::string>& problems) {
  std::map<std::pair<int, int>, std::vector<std::int32_t>> groups;
  for (const auto& t : g.tasks) {
    if (t.microbatch >= 0) groups[{t.minibatch, t.microbatch}].push_back(t.id);
  }
  for (const auto& t : g.tasks) {
    if (!is_backward(t.kind) || t.microbatch < 0) continue;
    std::set<std::int32_t> seen{t.id};
    std::queue<std::int32_t> frontier;
    frontier.push(t.id);
    bool found = false;
    while (!frontier.empty() && !found) {
      const Task& current = g.tasks[frontier.front()];
      frontier.pop();
      for (const auto dep : current.deps) {
        const Task& d = g.tasks[dep];
        if (d.minibatch != t.minibatch || d.microbatch != t.microbatch || !seen.insert(dep).second) {
          continue;
        }
        if ((d.kind == TaskKind::F || d.kind == TaskKind::RC) && d.first_layer <= t.last_layer &&
            t.first_layer <= d.last_layer) {
          found = true;
          break;
        }
        frontier.push(dep);
      }
    }
    if (!found) {
      problems.push_back(describe_task(g, t) + ": backward before forward: no dependency path from a "
                         "forward of microbatch " + std::to_string(t.microbatch) + " over layers " +
                         std::to_string(t.first_layer) + "-" + std::to_string(t.last_layer));
    }
  }
}

// Weight versions, per stage: an update reads the current version and writes the next; a forward
// reads the current one (the minibatch's, for synchronous schedules); a backward reads its
// forward's (stashed, synchronous) or the current one (stale).
void check_versions(const TaskGraph& g, std::vector<std::string>& problems) {
  std::map<std::tuple<int, int, int>, std::int32_t> forward_version;  // (stage, k, m) -> version
  const auto by_processor = tasks_by_processor(g);
  std::vector<std::int32_t> current(g.stages.size(), 0);
  auto complain = [&](const Task& t, const std::string& what) {
    problems.push_back(describe_task(g, t) + ": weight version " + std::to_string(t.version_read) +
                       " violates " + to_string(g.semantics) + " semantics: " + what);
  };
  // Forward versions first (a backward may sit on another processor than its forward).
  std::map<std::pair<int, int>, std::int32_t> writer;  // (stage, version) -> update
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::F && t.stage >= 0) {
      forward_version[{t.stage, t.minibatch, t.microbatch}] = t.version_read;
    }
    if (t.kind == TaskKind::U && t.stage >= 0) writer[{t.stage, t.version_written}] = t.id;
  }
  // Away from home a forward learns of a version only through a dependency on its update,
  // directly or over transfers.
  auto waits_for_writer = [&](const Task& t) {
    const auto it = writer.find({t.stage, t.version_read});
    if (it == writer.end()) return false;
    std::vector<std::int32_t> frontier(t.deps.begin(), t.deps.end());
    std::set<std::int32_t> seen;
    while (!frontier.empty()) {
      const std::int32_t id = frontier.back();
      frontier.pop_back();
      if (id == it->second) return true;
      if (g.tasks[id].kind != TaskKind::X || !seen.insert(id).second) continue;
      frontier.insert(frontier.end(), g.tasks[id].deps.begin(), g.tasks[id].deps.end());
    }
    return false;
  };
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    for (const auto id : by_processor[p]) {
      const Task& t = g.tasks[id];
      if (t.stage < 0) continue;
      const bool home = g.stages[t.stage].processor == static_cast<std::int32_t>(p);
      std::int32_t& now = current[t.stage];
      if (t.kind == TaskKind::U) {
        if (!home) {
          problems.push_back(describe_task(g, t) + ": the update of stage " + std::to_string(t.stage) +
                             " must run on the stage's processor");
        } else if (t.version_read != now || t.version_written != now + 1) {
          problems.push_back(describe_task(g, t) + ": update must read version " +
                             std::to_string(now) + " and write " + std::to_string(now + 1) +
                             ", got " + std::to_string(t.version_read) + " -> " +
                             std::to_string(t.version_written));
        }
        if (home) ++now;
      } else if ((t.kind == TaskKind::F || t.kind == TaskKind::RC) && g.semantics == WeightSemantics::delayed) {
        const std::int32_t delay = g.stages[t.stage].weight_delay;
        const std::int32_t wanted = std::max(0, t.minibatch * g.microbatches + t.microbatch - delay);
        if (t.version_read != wanted) {
          complain(t, "stage " + std::to_string(t.stage) + " lags " + std::to_string(delay) +
                          " updates, so this forward reads version " + std::to_string(wanted));
        } else if (home && t.version_read > now) {
          complain(t, "version " + std::to_string(wanted) + " does not exist yet on its processor (the newest is " +
                          std::to_string(now) + ")");
        } else if (!home && t.version_read > 0 && !waits_for_writer(t)) {
          complain(t, "no dependency on the update that writes it");
        }
      } else if (t.kind == TaskKind::F || t.kind == TaskKind::RC) {
        if (g.semantics == WeightSemantics::double_buffered) {
          const std::int32_t wanted = std::max(0, t.minibatch - 1);
          if (t.version_read != wanted) {
            complain(t, "a forward of minibatch " + std::to_string(t.minibatch) + " reads version " +
                            std::to_string(wanted));
          } else if (home && t.version_read > now) {
            complain(t, "version " + std::to_string(wanted) + " does not exist yet (the newest is " +
                            std::to_string(now) + "); use more microbatches");
          }
        } else if (home && t.kind == TaskKind::F && t.version_read != now) {
          complain(t, "a forward reads the newest version, " + std::to_string(now));
        }
        if (g.semantics == WeightSemantics::synchronous && t.version_read != t.minibatch) {
          complain(t, "minibatch " + std::to_string(t.minibatch) + " must read version " +
                          std::to_string(t.minibatch));
        }
      } else if (is_backward(t.kind)) {
        const auto it = forward_version.find({t.stage, t.minibatch, t.microbatch});
        const std::int32_t stashed = it == forward_version.end() ? -1 : it->second;
        if (g.semantics == WeightSemantics::stale) {
          if (home && t.version_read != now) complain(t, "without stashing a backward reads the newest version, " + std::to_string(now));
        } else if (t.version_read != stashed) {
          complain(t, "a backward reads its forward's version, " + std::to_string(stashed));
        } else if (g.semantics == WeightSemantics::synchronous && home && t.version_read != now) {
          complain(t, "an update happened between this backward and its forward");
        }
      }
    }
  }
}

}  // namespace

std::vector<std::int32_t> execution_order(const TaskGraph& g) {
  const auto n = g.tasks.size();
  std::vector<std::vector<std::int32_t>> successors(n);
  std::vector<std::int32_t> indegree(n, 0);
  for (const auto& t : g.tasks) {
    for (const auto dep : t.deps) {
      successors[dep].push_back(t.id);
      ++indegree[t.id];
    }
  }
  for (const auto& list : tasks_by_processor(g)) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      successors[list[i - 1]].push_back(list[i]);
      ++indegree[list[i]];
    }
  }
  std::vector<std::int32_t> order;
  order.reserve(n);
  std::vector<std::int32_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push_back(static_cast<std::int32_t>(i));
  }
  while (!ready.empty()) {
    const auto id = ready.back();
    ready.pop_back();
    order.push_back(id);
    for (const auto next : successors[id]) {
      if (--indegree[next] == 0) ready.push_back(next);
    }
  }
  if (order.size() == n) return order;
  // Walk predecessors among the blocked tasks until one repeats: that is a cycle.
  std::vector<std::vector<std::int32_t>> predecessors(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto next : successors[i]) predecessors[next].push_back(static_cast<std::int32_t>(i));
  }
  std::int32_t at = -1;
  for (std::size_t i = 0; i < n && at < 0; ++i) {
    if (indegree[i] > 0) at = static_cast<std::int32_t>(i);
  }
  std::vector<std::int32_t> walk;
  std::vector<int> position(n, -1);
  while (position[at] < 0) {
    position[at] = static_cast<int>(walk.size());
    walk.push_back(at);
    for (const auto prev : predecessors[at]) {
      if (indegree[prev] > 0) {
        at = prev;
        break;
      }
    }
  }
  std::vector<std::int32_t> cycle(walk.begin() + position[at], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string message = "deadlock: " + std::to_string(n - order.size()) +
                        " tasks can never start; dependencies and processor orders form a cycle: ";
  for (std::size_t i = 0; i < cycle.size() && i < 8; ++i) {
    message += (i ? " -> " : "") + describe_task(g, g.tasks[cycle[i]]);
  }
  if (cycle.size() > 8) message += " -> ... (" + std::to_string(cycle.size()) + " tasks)";
  throw Error(message);
}

std::vector<std::string> structural_problems(const TaskGraph& g) {
  std::vector<std::string> problems;
  check_structure(g, problems);
  return problems;
}

std::vector<std::string> validate(const TaskGraph& g) {
  std::vector<std::string> problems = structural_problems(g);
  if (!problems.empty()) return problems;
  try {
    execution_order(g);
  } catch (const Error& error) {
    problems.push_back(error.what());
    return problems;
  }
  check_forward_before_backward(g, problems);
  check_versions(g, problems);
  return problems;
}

void validate_or_throw(const TaskGraph& g) {
  const auto problems = validate(g);
  if (problems.empty()) return;
  std::string message = "invalid task graph: " + problems.front();
  if (problems.size() > 1) message += " (and " + std::to_string(problems.size() - 1) + " more problems)";
  throw Error(message);
}

}  // namespace pipetwin
