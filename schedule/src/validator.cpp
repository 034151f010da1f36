// Task-graph checks with messages that say what is wrong and where.
#include "pipetwin/schedule/validator.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/weight_versions.hpp"

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
    } else if (link.src == link.dst) {
      problems.push_back("link " + link.name + " connects processor " + std::to_string(link.src) + " with itself");
    }
    if (!(link.bytes_per_cycle > 0) || !std::isfinite(link.bytes_per_cycle)) {
      problems.push_back("link " + link.name + ": bytes_per_cycle must be a positive number");
    }
    if (link.latency_cycles < 0) problems.push_back("link " + link.name + ": negative latency_cycles");
    if (link.wake_cycles < 0 || link.delivery_cycles < 0 || link.wake_cycles > link.latency_cycles - link.delivery_cycles) {
      problems.push_back("link " + link.name + ": wake_cycles and delivery_cycles must be >= 0 and parts of latency_cycles (" +
                         std::to_string(link.wake_cycles) + " + " + std::to_string(link.delivery_cycles) + " > " +
                         std::to_string(link.latency_cycles) + ")");
    }
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
    if (t.placement == Placement::link && t.resource >= 0 &&
        t.resource < static_cast<std::int32_t>(g.links.size())) {
      const LinkInfo& link = g.links[t.resource];
      if (t.kind == TaskKind::OFF && link.dst != kHost) problems.push_back(who() + ": an offload must go over a link to host memory");
      if (t.kind == TaskKind::ON && link.src != kHost) problems.push_back(who() + ": a reload must come over a link from host memory");
      if (t.kind == TaskKind::X && (link.src == kHost || link.dst == kHost)) {
        problems.push_back(who() + ": a transfer between processors cannot use a host link");
      }
    }
    if (t.stage >= static_cast<std::int32_t>(g.stages.size())) {
      problems.push_back(who() + ": unknown stage " + std::to_string(t.stage));
    }
    if (t.minibatch >= g.minibatches || t.microbatch >= g.microbatches) {
      problems.push_back(who() + ": minibatch or microbatch out of range");
    }
    for (const auto& dep : t.deps) {
      if (dep.task < 0 || dep.task >= task_count) {
        problems.push_back(who() + ": depends on task " + std::to_string(dep.task) + ", which does not exist");
      } else if (dep.task == i) {
        problems.push_back(who() + ": depends on itself");
      }
      if (dep.bytes < 0) problems.push_back(who() + ": a dependency carries a negative number of bytes");
    }
    if (t.collective >= 0 && (t.kind != TaskKind::X || t.collective >= static_cast<std::int32_t>(g.collectives.size()))) {
      problems.push_back(who() + ": step of collective " + std::to_string(t.collective) + ", but " +
                         (t.kind != TaskKind::X ? "only transfers are steps of collectives"
                                                : "the graph has " + std::to_string(g.collectives.size())));
    } else if (t.collective < -1) {
      problems.push_back(who() + ": collective must be -1 (none) or a collective's index");
    }
    if (t.parts < 1 || t.part < 0 || t.part >= t.parts) {
      problems.push_back(who() + ": part " + std::to_string(t.part) + " of " + std::to_string(t.parts) +
                         " (parts must be at least 1, and 0 <= part < parts)");
    } else if (t.parts > 1 && t.kind != TaskKind::BA && t.kind != TaskKind::X) {
      problems.push_back(who() + ": only an activation-gradient part (BA) or its transfer is a part of the samples");
    }
  }
  for (std::size_t i = 0; i < g.buffers.size(); ++i) {
    const Buffer& b = g.buffers[i];
    const auto who = [&] { return "buffer " + std::to_string(i) + " (" + to_string(b.name.kind) + ")"; };
    const auto is_task = [&](std::int32_t id) { return id >= 0 && id < task_count; };
    if (b.bytes < 0) problems.push_back(who() + ": negative size");
    if (b.where != kHost && (b.where < 0 || b.where >= g.processor_count())) {
      problems.push_back(who() + ": held on unknown processor " + std::to_string(b.where));
    }
    if (b.allocated_by != -1 && !is_task(b.allocated_by)) {
      problems.push_back(who() + ": allocated by task " + std::to_string(b.allocated_by) + ", which does not exist");
    }
    for (const auto t : b.freed_after) {
      if (!is_task(t)) problems.push_back(who() + ": freed after task " + std::to_string(t) + ", which does not exist");
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

// Typed dependencies: what each one carries must be something its producer makes and its
// consumer takes; transfers move exactly one thing; every compute task gets the data it needs.
void check_data_flow(const TaskGraph& g, std::vector<std::string>& problems) {
  const auto last_layer = [&] {
    std::int32_t last = -1;
    for (const auto& t : g.tasks) last = std::max(last, t.last_layer);
    return last;
  }();
  // What a task makes: compute tasks by kind; a transfer, offload or reload what it moves.
  auto moved = [&](const Task& t) {
    const Dep* d = data_dependency(t);
    return d == nullptr ? Carries::order : d->carries;
  };
  auto makes = [&](const Task& t, Carries c) {
    switch (c) {
      case Carries::order: return true;
      case Carries::activation: return t.kind == TaskKind::F || (t.kind == TaskKind::X && moved(t) == c);
      case Carries::activation_gradient: return t.kind == TaskKind::B || t.kind == TaskKind::BA || (t.kind == TaskKind::X && moved(t) == c);
      case Carries::output_gradients: return t.kind == TaskKind::BA;
      case Carries::stash: return t.kind == TaskKind::F || t.kind == TaskKind::RC || (t.placement == Placement::link && moved(t) == c);
      case Carries::weights: return t.kind == TaskKind::U || (t.kind == TaskKind::X && moved(t) == c);
      case Carries::weight_gradient: return t.kind == TaskKind::B || t.kind == TaskKind::BW || (t.kind == TaskKind::X && moved(t) == c);
    }
    return false;
  };
  auto takes = [&](const Task& t, Carries c) {
    if (t.kind == TaskKind::X) return c != Carries::output_gradients;
    switch (c) {
      case Carries::order: return true;
      case Carries::activation: return t.kind == TaskKind::F;
      case Carries::activation_gradient: return is_backward(t.kind);
      case Carries::output_gradients: return t.kind == TaskKind::BW;
      case Carries::stash: return is_backward(t.kind) || t.kind == TaskKind::OFF || t.kind == TaskKind::ON || t.kind == TaskKind::RC;
      case Carries::weights: return t.kind != TaskKind::OFF && t.kind != TaskKind::ON;
      case Carries::weight_gradient: return t.kind == TaskKind::U;
    }
    return false;
  };
  for (const auto& t : g.tasks) {
    const auto who = [&] { return describe_task(g, t); };
    std::map<Carries, int> count;
    std::vector<std::int32_t> slice_parts;
    for (const auto& d : t.deps) {
      const Task& source = g.tasks[d.task];
      ++count[d.carries];
      if (d.carries == Carries::order && d.bytes != 0) problems.push_back(who() + ": an order-only dependency carries bytes");
      if (!makes(source, d.carries)) {
        problems.push_back(who() + ": depends on " + describe_task(g, source) + " for " + to_string(d.carries) +
                           ", which that task does not produce");
      } else if (!takes(t, d.carries)) {
        problems.push_back(who() + ": a " + to_string(t.kind) + " task does not take " + to_string(d.carries));
      }
      if (d.carries == Carries::activation_gradient) slice_parts.push_back(source.part);
      if (d.carries == Carries::output_gradients &&
          (source.first_layer != t.first_layer || source.last_layer != t.last_layer ||
           source.minibatch != t.minibatch || source.microbatch != t.microbatch)) {
        problems.push_back(who() + ": takes the output gradients of " + describe_task(g, source) +
                           ", which is not the BA of the same layers and microbatch");
      }
    }
    const int data_deps = static_cast<int>(t.deps.size()) - count[Carries::order];
    if (t.kind == TaskKind::X && (data_deps != 1 || data_dependency(t)->bytes != t.bytes)) {
      problems.push_back(who() + ": a transfer moves exactly one thing, of its own bytes (it has " +
                         std::to_string(data_deps) + " data dependencies)");
    }
    if ((t.kind == TaskKind::OFF || t.kind == TaskKind::ON) && (data_deps != 1 || count[Carries::stash] != 1)) {
      problems.push_back(who() + ": an offload or reload moves exactly one stash");
    }
    if (t.kind == TaskKind::F && t.first_layer > 0 && count[Carries::activation] != 1) {
      problems.push_back(who() + ": a forward after the first layer takes exactly one activation (it has " +
                         std::to_string(count[Carries::activation]) + ")");
    }
    if (t.kind == TaskKind::U && count[Carries::weight_gradient] == 0) {
      problems.push_back(who() + ": an update with no weight gradient to apply");
    }
    if ((t.kind == TaskKind::B || t.kind == TaskKind::BA || t.kind == TaskKind::BW) && t.last_layer < last_layer &&
        count[Carries::activation_gradient] == 0 && count[Carries::output_gradients] == 0) {
      problems.push_back(who() + ": a backward before the last layer gets no gradient at its output");
    }
    if (!slice_parts.empty() && t.placement == Placement::processor) {
      // The slices that make up one gradient: parts 0..n-1 of the same split, each once.
      std::sort(slice_parts.begin(), slice_parts.end());
      bool whole = true;
      for (std::size_t k = 0; k < slice_parts.size(); ++k) whole = whole && slice_parts[k] == static_cast<std::int32_t>(k);
      for (const auto& d : t.deps) {
        if (d.carries == Carries::activation_gradient) whole = whole && g.tasks[d.task].parts == static_cast<std::int32_t>(slice_parts.size());
      }
      if (!whole) {
        problems.push_back(who() + ": its " + std::to_string(slice_parts.size()) +
                           " incoming activation-gradient slices are not parts 0.." +
                           std::to_string(slice_parts.size() - 1) + " of one split, each once");
      }
    }
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
      for (const auto& dep : current.deps) {
        const Task& d = g.tasks[dep.task];
        if (d.minibatch != t.minibatch || d.microbatch != t.microbatch || !seen.insert(dep.task).second) {
          continue;
        }
        if ((d.kind == TaskKind::F || d.kind == TaskKind::RC) && d.first_layer <= t.last_layer &&
            t.first_layer <= d.last_layer) {
          found = true;
          break;
        }
        frontier.push(dep.task);
      }
    }
    if (!found) {
      problems.push_back(describe_task(g, t) + ": backward before forward: no dependency path from a "
                         "forward of microbatch " + std::to_string(t.microbatch) + " over layers " +
                         std::to_string(t.first_layer) + "-" + std::to_string(t.last_layer));
    }
  }
}

// Weight versions against the one rule (weight_versions.hpp): every declared version must be the
// rule's, and the rule's must make sense for the semantics (a synchronous forward of minibatch k
// reads version k; a version exists before it is read; a forward away from home waits for the
// update that writes the version it reads).
void check_versions(const TaskGraph& g, std::vector<std::string>& problems) {
  const WeightVersions rule = weight_version_rule(g);
  auto complain = [&](const Task& t, const std::string& what) {
    problems.push_back(describe_task(g, t) + ": weight version " + std::to_string(t.version_read) +
                       " violates " + to_string(g.semantics) + " semantics: " + what);
  };
  std::map<std::pair<int, int>, std::int32_t> writer;  // (stage, version) -> update
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::U && t.stage >= 0) writer[{t.stage, t.version_written}] = t.id;
  }
  // Away from home a forward learns of a version only through a dependency on its update,
  // directly or over transfers.
  auto waits_for_writer = [&](const Task& t) {
    const auto it = writer.find({t.stage, t.version_read});
    if (it == writer.end()) return false;
    std::vector<std::int32_t> frontier = dep_ids(t);
    std::set<std::int32_t> seen;
    while (!frontier.empty()) {
      const std::int32_t id = frontier.back();
      frontier.pop_back();
      if (id == it->second) return true;
      if (g.tasks[id].kind != TaskKind::X || !seen.insert(id).second) continue;
      for (const auto& d : g.tasks[id].deps) frontier.push_back(d.task);
    }
    return false;
  };
  for (const auto& t : g.tasks) {
    if (t.stage < 0 || t.placement != Placement::processor) continue;
    const bool home = g.stages[t.stage].processor == t.resource;
    const std::int32_t wanted = rule.read[t.id];
    const std::int32_t now = rule.newest[t.id];
    if (t.kind == TaskKind::U) {
      if (!home) {
        problems.push_back(describe_task(g, t) + ": the update of stage " + std::to_string(t.stage) +
                           " must run on the stage's processor");
      } else if (t.version_read != wanted || t.version_written != rule.written[t.id]) {
        problems.push_back(describe_task(g, t) + ": update must read version " + std::to_string(wanted) +
                           " and write " + std::to_string(rule.written[t.id]) + ", got " +
                           std::to_string(t.version_read) + " -> " + std::to_string(t.version_written));
      }
    } else if (t.kind == TaskKind::RC) {
      if (t.version_read != wanted) complain(t, "a recomputation reads its forward's version, " + std::to_string(wanted));
    } else if (t.kind == TaskKind::F && g.semantics == WeightSemantics::delayed) {
      const std::int32_t delay = g.stages[t.stage].weight_delay;
      if (t.version_read != wanted) {
        complain(t, "stage " + std::to_string(t.stage) + " lags " + std::to_string(delay) +
                        " updates, so this forward reads version " + std::to_string(wanted));
      } else if (home && t.version_read > now) {
        complain(t, "version " + std::to_string(wanted) + " does not exist yet on its processor (the newest is " +
                        std::to_string(now) + ")");
      } else if (!home && t.version_read > 0 && !waits_for_writer(t)) {
        complain(t, "no dependency on the update that writes it");
      }
    } else if (t.kind == TaskKind::F) {
      if (g.semantics == WeightSemantics::double_buffered) {
        if (t.version_read != wanted) {
          complain(t, "a forward of minibatch " + std::to_string(t.minibatch) + " reads version " +
                          std::to_string(wanted));
        } else if (home && t.version_read > now) {
          complain(t, "version " + std::to_string(wanted) + " does not exist yet (the newest is " +
                          std::to_string(now) + "); use more microbatches");
        }
      } else if (home && t.version_read != wanted) {
        complain(t, "a forward reads the newest version, " + std::to_string(wanted));
      }
      if (g.semantics == WeightSemantics::synchronous && t.version_read != t.minibatch) {
        complain(t, "minibatch " + std::to_string(t.minibatch) + " must read version " +
                        std::to_string(t.minibatch));
      }
    } else if (is_backward(t.kind)) {
      if (g.semantics == WeightSemantics::stale) {
        if (home && t.version_read != wanted) complain(t, "without stashing a backward reads the newest version, " + std::to_string(wanted));
      } else if (t.version_read != wanted) {
        complain(t, "a backward reads its forward's version, " + std::to_string(wanted));
      } else if (g.semantics == WeightSemantics::synchronous && home && t.version_read != now) {
        complain(t, "an update happened between this backward and its forward");
      }
    }
  }
}

}  // namespace

std::vector<std::int32_t> execution_order(const TaskGraph& g, LinkOrders link_orders) {
  const auto n = g.tasks.size();
  // Each task's successors as one compressed list (CSR: task i's are successor[first[i] ..
  // first[i + 1])), counted then filled in one order: dependencies, processor orders, in-order
  // links. A vector per task cost a heap block each, most of the time on graphs of millions.
  const auto processor_lists = tasks_by_processor(g);
  std::vector<std::vector<std::int32_t>> link_lists;
  if (link_orders == LinkOrders::follow) {
    auto by_link = tasks_by_link(g);
    for (std::size_t k = 0; k < by_link.size(); ++k) {
      if (g.links[k].policy == LinkPolicy::in_order) link_lists.push_back(std::move(by_link[k]));
    }
  }
  std::vector<std::int64_t> first(n + 1, 0);  // [n + 1]: counts, then starts
  std::vector<std::int32_t> indegree(n, 0);
  auto each_edge = [&](auto&& edge) {
    for (const auto& t : g.tasks) {
      for (const auto& dep : t.deps) edge(dep.task, t.id);
    }
    for (const auto& list : processor_lists) {
      for (std::size_t i = 1; i < list.size(); ++i) edge(list[i - 1], list[i]);
    }
    for (const auto& list : link_lists) {
      for (std::size_t i = 1; i < list.size(); ++i) edge(list[i - 1], list[i]);
    }
  };
  each_edge([&](std::int32_t from, std::int32_t to) {
    ++first[static_cast<std::size_t>(from) + 1];
    ++indegree[to];
  });
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<std::int32_t> successor(static_cast<std::size_t>(first[n]));  // [edges]
  std::vector<std::int64_t> filled(first.begin(), first.end() - 1);          // [n]: next free slot
  each_edge([&](std::int32_t from, std::int32_t to) { successor[static_cast<std::size_t>(filled[from]++)] = to; });
  auto successors = [&](std::size_t i) {
    return std::make_pair(successor.begin() + first[i], successor.begin() + first[i + 1]);
  };
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
    for (auto [at, end] = successors(static_cast<std::size_t>(id)); at != end; ++at) {
      if (--indegree[*at] == 0) ready.push_back(*at);
    }
  }
  if (order.size() == n) return order;
  // Walk predecessors among the blocked tasks until one repeats: that is a cycle.
  std::vector<std::vector<std::int32_t>> predecessors(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (auto [at, end] = successors(i); at != end; ++at) predecessors[*at].push_back(static_cast<std::int32_t>(i));
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
                        " tasks can never start; dependencies and processor (or in-order link) orders form a cycle: ";
  for (std::size_t i = 0; i < cycle.size() && i < 8; ++i) {
    message += (i ? " -> " : "") + describe_task(g, g.tasks[cycle[i]]);
  }
  if (cycle.size() > 8) message += " -> ... (" + std::to_string(cycle.size()) + " tasks)";
  throw Error(message);
}

std::string bounds_problem(const TaskGraph& g) {
  std::int64_t cycles = 0, bytes = 0;
  const auto add = [](std::int64_t& sum, std::int64_t value, std::int64_t limit) {
    if (value < 0 || value > limit || sum > limit - value) return false;
    sum += value;
    return true;
  };
  // The wait loss: waits ascending, a charge per byte that is a number >= 0.
  double most_per_byte = 0;
  for (std::size_t i = 0; i < g.wait_loss.size(); ++i) {
    const WaitLossPoint& point = g.wait_loss[i];
    if (point.wait_cycles <= 0 || (i > 0 && point.wait_cycles <= g.wait_loss[i - 1].wait_cycles) ||
        !(std::isfinite(point.extra_cycles_per_byte) && point.extra_cycles_per_byte >= 0 && point.extra_cycles_per_byte < 1e6)) {
      return "wait loss point " + std::to_string(i) + ": needs a wait above 0 and the previous point's, and cycles per byte in [0, 1e6)";
    }
    most_per_byte = std::max(most_per_byte, point.extra_cycles_per_byte);
  }
  for (const auto& t : g.tasks) {
    if (t.cost_cycles < 0) return describe_task(g, t) + ": negative cost";
    if (t.wait_exposed_bytes < 0 || t.wait_exposed_bytes > kMaxBytes) {
      return describe_task(g, t) + ": its wait-exposed bytes must be 0 to 2^60";
    }
    // Its largest wait charge counts towards the total, as a cost.
    const double most_wait_cycles = std::ceil(most_per_byte * static_cast<double>(t.wait_exposed_bytes));
    if (most_wait_cycles > static_cast<double>(kMaxTotalCycles) ||
        !add(cycles, static_cast<std::int64_t>(most_wait_cycles), kMaxTotalCycles)) {
      return describe_task(g, t) + ": its cost after a wait and the other tasks' add up to more than 2^50 cycles; check the "
             "calibration's wait curve";
    }
    if (!add(cycles, t.cost_cycles, kMaxTotalCycles)) {
      return describe_task(g, t) + ": the tasks' costs add up to more than 2^50 cycles (" +
             std::to_string(kMaxTotalCycles) + "), more than the engines represent exactly; check the "
             "hardware's clock and the calibration's times";
    }
    std::int64_t task_bytes = 0;
    bool fits = add(task_bytes, t.bytes, kMaxBytes);
    for (const auto& d : t.deps) fits = fits && add(task_bytes, d.bytes, kMaxBytes);
    if (!fits) return describe_task(g, t) + ": moves or takes more than 2^60 bytes; check the network's sizes";
  }
  for (const auto& b : g.buffers) {
    if (!add(bytes, b.bytes, kMaxBytes)) {
      return std::string("the graph's ") + to_string(b.name.kind) + " buffers and the others add up to more than "
             "2^60 bytes; check the network's sizes";
    }
  }
  for (const auto& p : g.processors) {
    if (!add(bytes, p.static_bytes, kMaxBytes)) return p.name + ": static bytes beyond 2^60 with the buffers";
  }
  return "";
}

std::vector<std::string> structural_problems(const TaskGraph& g) {
  std::vector<std::string> problems;
  check_structure(g, problems);
  if (problems.empty()) {
    const std::string bounds = bounds_problem(g);
    if (!bounds.empty()) problems.push_back(bounds);
  }
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
  check_data_flow(g, problems);
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
