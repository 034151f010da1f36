// Memory tracking from allocation and free events (see memory_observer.hpp).
#include "pipetwin/schedule/memory_observer.hpp"

#include <algorithm>

namespace pipetwin {

std::vector<MemoryEffect> declared_memory_effects(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::vector<MemoryEffect> effects;
  for (const auto& t : g.tasks) {
    const TaskTiming& at = times[static_cast<std::size_t>(t.id)];
    const std::int32_t owner = memory_owner(g, t);
    if (owner >= 0) {
      if (t.alloc_bytes > 0) effects.push_back({at.start_cycles, owner, t.alloc_bytes, t.id, true});
      if (t.free_bytes > 0) effects.push_back({at.end_cycles, owner, t.free_bytes, t.id, false});
    }
    if (t.kind == TaskKind::OFF && t.bytes > 0) effects.push_back({at.start_cycles, kHost, t.bytes, t.id, true});
    if (t.kind == TaskKind::ON && t.bytes > 0) effects.push_back({at.end_cycles, kHost, t.bytes, t.id, false});
  }
  return effects;
}

void tell_initial_memory(const TaskGraph& g, EngineObserver& observer) {
  for (std::size_t p = 0; p < g.processors.size(); ++p) {
    observer.allocated(static_cast<std::int32_t>(p), g.processors[p].static_bytes, -1, 0);
  }
  observer.allocated(kHost, 0, -1, 0);
}

MemoryObserver::MemoryObserver(const TaskGraph& graph) : graph_(graph), events_(graph.processors.size() + 1) {}

std::vector<MemoryObserver::Event>& MemoryObserver::of(std::int32_t where) { return events_[memory_slot(graph_, where)]; }

void MemoryObserver::allocated(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) {
  of(where).push_back({cycles, bytes, task});
}

void MemoryObserver::freed(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) {
  of(where).push_back({cycles, -bytes, task});
}

namespace {

// Returns the peak; records the first crossing of `capacity` and, when asked, the timeline.
template <typename Event>
std::int64_t replay(std::vector<Event> events, std::int64_t capacity, std::int32_t owner,
                    std::vector<OutOfMemory>& out_of_memory, std::vector<MemoryPoint>* timeline) {
  const auto initial = [](const Event& e) { return e.task < 0 && e.time == 0; };
  std::sort(events.begin(), events.end(), [&](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (initial(a) != initial(b)) return initial(a);
    if ((a.delta < 0) != (b.delta < 0)) return a.delta < 0;
    return a.task < b.task;
  });
  std::int64_t live = 0, peak = 0;
  bool crossed = false;
  for (const auto& event : events) {
    live += event.delta;
    peak = std::max(peak, live);
    if (!crossed && live > capacity) {
      crossed = true;
      out_of_memory.push_back({owner, event.task, event.time, live, capacity});
    }
    if (timeline != nullptr) {
      if (!timeline->empty() && timeline->back().time_cycles == event.time) {
        timeline->back().bytes = live;
      } else {
        timeline->push_back({event.time, live});
      }
    }
  }
  return peak;
}

}  // namespace

MemoryReport MemoryObserver::report(bool record_timeline) const {
  MemoryReport report;
  const std::size_t processors = graph_.processors.size();
  if (record_timeline) report.timeline.resize(processors);
  for (std::size_t p = 0; p < processors; ++p) {
    report.peak_bytes.push_back(replay(events_[p], graph_.processors[p].memory_capacity_bytes,
                                       static_cast<std::int32_t>(p), report.out_of_memory,
                                       record_timeline ? &report.timeline[p] : nullptr));
  }
  report.host_peak_bytes = replay(events_.back(), graph_.host_memory_capacity_bytes, kHost, report.out_of_memory,
                                  record_timeline ? &report.host_timeline : nullptr);
  return report;
}

}  // namespace pipetwin
