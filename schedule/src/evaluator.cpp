// The analytic evaluator: earliest start of every task given its dependencies and its
// processor's order; transfers are pure delays (no contention).
#include "pipetwin/schedule/evaluator.hpp"

#include <algorithm>
#include <numeric>

#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

double steady_state_iteration_cycles(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::int64_t total = 0;
  for (const auto& t : g.tasks) total = std::max(total, times[t.id].end_cycles);
  auto spacing = [](const std::vector<std::int64_t>& ends, std::size_t from, std::size_t to) {
    return static_cast<double>(ends[to] - ends[from]) / static_cast<double>(to - from);
  };
  if (g.semantics == WeightSemantics::synchronous) {
    // A flush per minibatch: every minibatch after the first repeats the same pattern.
    if (g.minibatches < 2) return static_cast<double>(total);
    std::vector<std::int64_t> ends(g.minibatches, 0);
    for (const auto& t : g.tasks) {
      if (t.minibatch >= 0) ends[t.minibatch] = std::max(ends[t.minibatch], times[t.id].end_cycles);
    }
    const std::size_t last = ends.size() - 1;
    return spacing(ends, last / 2, last);
  }
  // Asynchronous: microbatches stream without a flush. Completions are periodic between the
  // warm-up (the first S microbatches) and the cool-down (the last S); measure in between.
  const std::size_t stream = static_cast<std::size_t>(g.minibatches) * g.microbatches;
  if (stream < 2) return static_cast<double>(total);
  std::vector<std::int64_t> ends(stream, 0);
  for (const auto& t : g.tasks) {
    if (t.minibatch < 0 || t.microbatch < 0) continue;
    const std::size_t n = static_cast<std::size_t>(t.minibatch) * g.microbatches + t.microbatch;
    ends[n] = std::max(ends[n], times[t.id].end_cycles);
  }
  std::size_t from = g.stages.size(), to = stream - 1 - std::min(stream - 1, g.stages.size());
  if (to <= from) {
    from = 0;
    to = stream - 1;
  }
  return spacing(ends, from, to) * g.microbatches;
}

std::vector<std::int64_t> peak_memory(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  struct Event {
    std::int64_t time;
    std::int64_t delta;
  };
  std::vector<std::vector<Event>> events(g.processors.size());
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::processor) continue;
    if (t.alloc_bytes) events[t.resource].push_back({times[t.id].start_cycles, t.alloc_bytes});
    if (t.free_bytes) events[t.resource].push_back({times[t.id].end_cycles, -t.free_bytes});
  }
  std::vector<std::int64_t> peaks;
  for (std::size_t p = 0; p < g.processors.size(); ++p) {
    auto& list = events[p];
    std::sort(list.begin(), list.end(), [](const Event& a, const Event& b) {
      return a.time != b.time ? a.time < b.time : a.delta < b.delta;  // frees first
    });
    std::int64_t live = g.processors[p].static_bytes, peak = live;
    for (const auto& event : list) {
      live += event.delta;
      peak = std::max(peak, live);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

Result evaluate(const TaskGraph& g) {
  const auto order = execution_order(g);  // throws on a deadlock
  const auto by_processor = tasks_by_processor(g);
  std::vector<std::int32_t> previous_on_processor(g.tasks.size(), -1);
  for (const auto& list : by_processor) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_processor[list[i]] = list[i - 1];
  }
  Result r;
  r.engine = "analytic";
  r.tasks.assign(g.tasks.size(), {});
  for (const auto id : order) {
    const Task& t = g.tasks[id];
    std::int64_t start = 0;
    for (const auto dep : t.deps) start = std::max(start, r.tasks[dep].end_cycles);
    if (previous_on_processor[id] >= 0) {
      start = std::max(start, r.tasks[previous_on_processor[id]].end_cycles);
    }
    r.tasks[id] = {start, start + t.cost_cycles};
    r.total_cycles = std::max(r.total_cycles, start + t.cost_cycles);
  }
  r.busy_cycles.assign(g.processors.size(), 0);
  r.link_bytes.assign(g.links.size(), 0);
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::processor) {
      r.busy_cycles[t.resource] += t.cost_cycles;
    } else {
      r.link_bytes[t.resource] += t.bytes;
    }
  }
  for (const auto busy : r.busy_cycles) {
    r.utilization.push_back(r.total_cycles > 0 ? static_cast<double>(busy) /
                                                     static_cast<double>(r.total_cycles)
                                               : 0.0);
  }
  r.mean_utilization = r.utilization.empty()
                           ? 0.0
                           : std::accumulate(r.utilization.begin(), r.utilization.end(), 0.0) /
                                 static_cast<double>(r.utilization.size());
  r.bubble_fraction = 1.0 - r.mean_utilization;
  r.total_s = static_cast<double>(r.total_cycles) / g.clock_hz;
  r.iteration_cycles = steady_state_iteration_cycles(g, r.tasks);
  r.iteration_s = r.iteration_cycles / g.clock_hz;
  r.peak_memory_bytes = peak_memory(g, r.tasks);
  return r;
}

nlohmann::ordered_json result_to_json(const TaskGraph& g, const Result& r, bool with_task_times) {
  nlohmann::ordered_json j;
  j["engine"] = r.engine;
  j["schedule"] = g.schedule;
  j["model"] = g.model;
  j["hardware"] = g.hardware;
  j["processors"] = g.processor_count();
  j["stages"] = g.stages.size();
  j["microbatches"] = g.microbatches;
  j["minibatches"] = g.minibatches;
  j["clock_hz"] = g.clock_hz;
  j["total_cycles"] = r.total_cycles;
  j["total_s"] = r.total_s;
  j["iteration_cycles"] = r.iteration_cycles;
  j["iteration_s"] = r.iteration_s;
  j["utilization"] = r.utilization;
  j["mean_utilization"] = r.mean_utilization;
  j["bubble_fraction"] = r.bubble_fraction;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  std::vector<std::int64_t> capacity;
  for (const auto& p : g.processors) capacity.push_back(p.memory_capacity_bytes);
  j["memory_capacity_bytes"] = capacity;
  j["link_bytes"] = std::accumulate(r.link_bytes.begin(), r.link_bytes.end(), std::int64_t{0});
  j["tasks"] = g.tasks.size();
  if (with_task_times) {
    nlohmann::ordered_json times = nlohmann::ordered_json::array();
    for (const auto& t : g.tasks) {
      times.push_back({{"id", t.id}, {"label", task_label(t)}, {"kind", to_string(t.kind)},
                       {"placement", to_string(t.placement)}, {"resource", t.resource},
                       {"start_cycles", r.tasks[t.id].start_cycles},
                       {"end_cycles", r.tasks[t.id].end_cycles}});
    }
    j["task_times"] = times;
  }
  return j;
}

}  // namespace pipetwin
