// The engine-independent part of a Result: everything derived from task times.
#include "pipetwin/schedule/summary.hpp"

#include "pipetwin/schedule/memory_observer.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace pipetwin {

const char* to_string(IdleReason reason) {
  switch (reason) {
    case IdleReason::waiting_on_data: return "waiting on data";
    case IdleReason::waiting_on_link: return "waiting on a link";
    case IdleReason::waiting_on_memory: return "waiting on memory";
    case IdleReason::nothing_to_do: return "nothing to do";
  }
  return "?";
}

namespace {

// Per minibatch: its last task's end.
std::vector<std::int64_t> minibatch_ends(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::vector<std::int64_t> ends(static_cast<std::size_t>(std::max(g.minibatches, 0)), 0);
  for (const auto& t : g.tasks) {
    if (t.minibatch < 0) continue;
    std::int64_t& end = ends[static_cast<std::size_t>(t.minibatch)];
    end = std::max(end, times[t.id].end_cycles);
  }
  return ends;
}

}  // namespace

double steady_state_iteration_cycles(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::int64_t total = 0;
  for (const auto& t : g.tasks) total = std::max(total, times[t.id].end_cycles);
  auto spacing = [](const std::vector<std::int64_t>& ends, std::size_t from, std::size_t to) {
    return static_cast<double>(ends[to] - ends[from]) / static_cast<double>(to - from);
  };
  if (g.semantics == WeightSemantics::synchronous) {
    // A flush per minibatch: every minibatch after the first repeats the same pattern.
    if (g.minibatches < 2) return static_cast<double>(total);
    const std::vector<std::int64_t> ends = minibatch_ends(g, times);
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
  // Skip warm-up and cool-down: twice the pipeline's depth in microbatches (stages, at most P:
  // layerpipe has a stage per layer; stale-weights warms up for 2S - 1) where the stream is long
  // enough, else the depth; and at least a quarter of the stream at each end.
  const std::size_t depth = std::min(g.stages.size(), static_cast<std::size_t>(g.processor_count()));
  std::size_t from = std::max(stream / 4, 2 * depth);
  if (2 * from + 1 >= stream) from = std::max(stream / 4, depth);  // a short stream: less margin
  std::size_t to = stream - 1 - std::min(stream - 1, from);
  if (to <= from) {
    from = 0;
    to = stream - 1;
  }
  return spacing(ends, from, to) * g.microbatches;
}

std::vector<std::int64_t> steady_step_bounds(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  if (g.minibatches < 2) return {};
  const std::vector<std::int64_t> ends = minibatch_ends(g, times);
  const std::size_t last = ends.size() - 1;
  return {ends.begin() + static_cast<std::ptrdiff_t>(last / 2), ends.end()};
}

MemoryReport track_memory(const TaskGraph& g, const std::vector<TaskTiming>& times,
                          bool record_timeline) {
  MemoryObserver memory(g);
  tell_initial_memory(g, memory);
  for (const auto& e : declared_memory_effects(g, times)) {
    if (e.allocates) {
      memory.allocated(e.change);
    } else {
      memory.freed(e.change);
    }
  }
  return memory.report(record_timeline, steady_step_bounds(g, times));
}

std::string describe_out_of_memory(const TaskGraph& g, const OutOfMemory& e) {
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "%.3f GB, capacity %.3f GB",
                static_cast<double>(e.live_bytes) / 1e9, static_cast<double>(e.capacity_bytes) / 1e9);
  const std::string who = e.task < 0 ? std::string("what it holds from the start (the initial weights) needs ")
                                     : describe_task(g, g.tasks[e.task]) + " raised live memory to ";
  const std::string memory = e.processor == kHost ? "host memory" : g.processors[e.processor].name;
  return "out of memory on " + memory + " at cycle " +
         std::to_string(e.time_cycles) + ": " + who + numbers;
}

namespace {

void attribute_idle(const TaskGraph& g, Result& r) {
  r.idle_cycles.assign(g.processors.size(), {});
  const auto by_processor = tasks_by_processor(g);
  auto add = [&](std::int32_t p, std::int64_t start, std::int64_t end, IdleReason reason,
                 std::int32_t waiting_for) {
    if (end <= start) return;
    r.idle_spans.push_back({p, start, end, reason, waiting_for});
    IdleCycles& idle = r.idle_cycles[p];
    const std::int64_t length = end - start;
    switch (reason) {
      case IdleReason::waiting_on_data: idle.waiting_on_data += length; break;
      case IdleReason::waiting_on_link: idle.waiting_on_link += length; break;
      case IdleReason::waiting_on_memory: idle.waiting_on_memory += length; break;
      case IdleReason::nothing_to_do: idle.nothing_to_do += length; break;
    }
  };
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    const auto processor = static_cast<std::int32_t>(p);
    std::int64_t previous_end = 0;
    for (const auto id : by_processor[p]) {
      const Task& t = g.tasks[id];
      const std::int64_t start = r.tasks[id].start_cycles;
      if (start > previous_end) {
        // The dependency that ended last is what the processor was waiting for.
        std::int32_t last = -1;
        for (const auto& dep : t.deps) {
          if (last < 0 || r.tasks[dep.task].end_cycles > r.tasks[last].end_cycles) last = dep.task;
        }
        if (last < 0 || r.tasks[last].end_cycles <= previous_end) {
          add(processor, previous_end, start, IdleReason::nothing_to_do, last);
        } else if (g.tasks[last].placement == Placement::link) {
          // Waiting for the data until the transfer began, then for the link.
          const std::int64_t sent = std::clamp(r.tasks[last].start_cycles, previous_end, start);
          add(processor, previous_end, sent, IdleReason::waiting_on_data, last);
          add(processor, sent, start, IdleReason::waiting_on_link, last);
        } else {
          add(processor, previous_end, start, IdleReason::waiting_on_data, last);
        }
      }
      previous_end = std::max(previous_end, r.tasks[id].end_cycles);
    }
    add(processor, previous_end, r.total_cycles, IdleReason::nothing_to_do, -1);
  }
}

std::vector<std::int64_t> link_busy(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> spans(g.links.size());
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::link) spans[t.resource].push_back({times[t.id].start_cycles, times[t.id].end_cycles});
  }
  std::vector<std::int64_t> busy;
  for (auto& list : spans) {
    std::sort(list.begin(), list.end());
    std::int64_t total = 0, covered_until = 0;
    for (const auto& [start, end] : list) {
      const std::int64_t from = std::max(start, covered_until);
      if (end > from) total += end - from;
      covered_until = std::max(covered_until, end);
    }
    busy.push_back(total);
  }
  return busy;
}

}  // namespace

Result summarize(const TaskGraph& g, std::vector<TaskTiming> times, const std::string& engine,
                 bool record_memory_timeline) {
  MemoryReport memory = track_memory(g, times, record_memory_timeline);
  return summarize(g, std::move(times), engine, std::move(memory));
}

Result summarize(const TaskGraph& g, std::vector<TaskTiming> times, const std::string& engine, MemoryReport memory) {
  Result r;
  r.engine = engine;
  r.tasks = std::move(times);
  for (const auto& t : r.tasks) r.total_cycles = std::max(r.total_cycles, t.end_cycles);
  r.busy_cycles.assign(g.processors.size(), 0);
  r.link_bytes.assign(g.links.size(), 0);
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::processor) {
      r.busy_cycles[t.resource] += r.tasks[t.id].end_cycles - r.tasks[t.id].start_cycles;
    } else {
      r.link_bytes[t.resource] += t.bytes;
    }
  }
  const double total = static_cast<double>(r.total_cycles);
  for (const auto busy : r.busy_cycles) {
    r.utilization.push_back(r.total_cycles > 0 ? static_cast<double>(busy) / total : 0.0);
  }
  r.mean_utilization = r.utilization.empty()
                           ? 0.0
                           : std::accumulate(r.utilization.begin(), r.utilization.end(), 0.0) /
                                 static_cast<double>(r.utilization.size());
  r.bubble_fraction = 1.0 - r.mean_utilization;
  r.total_s = total / g.clock_hz;
  r.iteration_cycles = steady_state_iteration_cycles(g, r.tasks);
  r.iteration_s = r.iteration_cycles / g.clock_hz;
  attribute_idle(g, r);
  r.peak_memory_bytes = std::move(memory.peak_bytes);
  r.step_peak_memory_bytes = std::move(memory.step_peak_bytes);
  r.step_compute_peak_memory_bytes = std::move(memory.step_compute_peak_bytes);
  r.memory_timeline = std::move(memory.timeline);
  r.out_of_memory = std::move(memory.out_of_memory);
  r.host_peak_memory_bytes = memory.host_peak_bytes;
  r.host_memory_timeline = std::move(memory.host_timeline);
  r.link_busy_cycles = link_busy(g, r.tasks);
  for (const auto busy : r.link_busy_cycles) {
    r.link_utilization.push_back(r.total_cycles > 0 ? static_cast<double>(busy) / total : 0.0);
  }
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
  nlohmann::ordered_json idle = nlohmann::ordered_json::array();
  for (const auto& i : r.idle_cycles) {
    idle.push_back({{"waiting_on_data", i.waiting_on_data}, {"waiting_on_link", i.waiting_on_link},
                    {"waiting_on_memory", i.waiting_on_memory}, {"nothing_to_do", i.nothing_to_do}});
  }
  j["idle_cycles"] = idle;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["step_peak_memory_bytes"] = r.step_peak_memory_bytes;
  j["step_compute_peak_memory_bytes"] = r.step_compute_peak_memory_bytes;
  std::vector<std::int64_t> capacity;
  for (const auto& p : g.processors) capacity.push_back(p.memory_capacity_bytes);
  j["memory_capacity_bytes"] = capacity;
  j["host_peak_memory_bytes"] = r.host_peak_memory_bytes;
  j["host_memory_capacity_bytes"] = g.host_memory_capacity_bytes;
  nlohmann::ordered_json oom = nlohmann::ordered_json::array();
  for (const auto& e : r.out_of_memory) oom.push_back(describe_out_of_memory(g, e));
  j["out_of_memory"] = oom;
  j["link_bytes"] = r.link_bytes;
  j["link_utilization"] = r.link_utilization;
  j["total_link_bytes"] = std::accumulate(r.link_bytes.begin(), r.link_bytes.end(), std::int64_t{0});
  j["tasks"] = g.tasks.size();
  if (!g.schedule_metrics.empty()) j["schedule_metrics"] = g.schedule_metrics;  // what the generator computed
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
