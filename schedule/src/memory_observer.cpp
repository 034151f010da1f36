// Memory tracking from allocation and free events (see memory_observer.hpp).
#include "pipetwin/schedule/memory_observer.hpp"

#include <algorithm>
#include <iterator>

#include "pipetwin/models/error.hpp"

namespace pipetwin {

std::vector<MemoryEffect> declared_memory_effects(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::vector<MemoryEffect> effects;
  const auto at = [&](std::int32_t task) -> const TaskTiming& { return times[static_cast<std::size_t>(task)]; };
  for (const auto& b : g.buffers) {
    if (b.bytes == 0) continue;
    const std::int64_t allocated = b.allocated_by < 0 ? 0 : at(b.allocated_by).start_cycles;
    if (b.allocated_by >= 0) effects.push_back({{b.name, b.where, b.bytes, b.allocated_by, allocated}, true});
    if (b.freed_after.empty()) continue;
    std::int32_t last = b.freed_after.front();
    for (const auto t : b.freed_after) {
      if (std::make_pair(at(t).end_cycles, t) > std::make_pair(at(last).end_cycles, last)) last = t;
    }
    if (at(last).end_cycles < allocated) {
      throw Error("graph: a " + std::string(to_string(b.name.kind)) + " buffer allocated by " +
                  describe_task(g, g.tasks[static_cast<std::size_t>(b.allocated_by)]) + " is freed after " +
                  describe_task(g, g.tasks[static_cast<std::size_t>(last)]) +
                  ", which ends before it starts (a reader that does not depend on the allocation)");
    }
    effects.push_back({{b.name, b.where, b.bytes, last, at(last).end_cycles}, false});
  }
  return effects;
}

void tell_initial_memory(const TaskGraph& g, EngineObserver& observer) {
  for (std::size_t p = 0; p < g.processors.size(); ++p) {
    observer.allocated({{BufferKind::resident, -1, -1}, static_cast<std::int32_t>(p), g.processors[p].static_bytes, -1, 0});
  }
  for (const auto& b : g.buffers) {
    if (b.allocated_by < 0 && b.bytes > 0) observer.allocated({b.name, b.where, b.bytes, -1, 0});
  }
  observer.allocated({{BufferKind::resident, -1, -1}, kHost, 0, -1, 0});
}

MemoryObserver::MemoryObserver(const TaskGraph& graph) : graph_(graph), events_(graph.processors.size() + 1) {}

std::vector<MemoryObserver::Event>& MemoryObserver::of(std::int32_t where) { return events_[memory_slot(graph_, where)]; }

void MemoryObserver::allocated(const MemoryChange& c) { of(c.where).push_back({c.cycles, c.bytes, c.task}); }

void MemoryObserver::freed(const MemoryChange& c) { of(c.where).push_back({c.cycles, -c.bytes, c.task}); }

namespace {

// Returns the peak; records the first crossing of `capacity` and, when asked, the timeline and
// the compute timeline: the bytes held after each event of a task that is not an update (and the
// initial state), what the forwards and backwards hold while they run, without the versions an
// update holds only while it runs.
template <typename Event>
std::int64_t replay(std::vector<Event> events, std::int64_t capacity, std::int32_t owner,
                    std::vector<OutOfMemory>& out_of_memory, std::vector<MemoryPoint>* timeline,
                    const TaskGraph* graph = nullptr, std::vector<MemoryPoint>* compute_timeline = nullptr) {
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
    const auto record = [&](std::vector<MemoryPoint>& points) {
      if (!points.empty() && points.back().time_cycles == event.time) {
        points.back().bytes = live;
      } else {
        points.push_back({event.time, live});
      }
    };
    if (timeline != nullptr) record(*timeline);
    if (compute_timeline != nullptr &&
        (event.task < 0 || graph->tasks[static_cast<std::size_t>(event.task)].kind != TaskKind::U)) {
      record(*compute_timeline);
    }
  }
  return peak;
}

// The upper median over steps of each step's peak: step i runs from step_bounds[i] to
// step_bounds[i + 1] and holds what is live as it begins (after the events at its first time) and
// every level reached before its end. `whole` where there is no step.
std::int64_t median_step_peak(const std::vector<MemoryPoint>& timeline, const std::vector<std::int64_t>& step_bounds,
                              std::int64_t whole) {
  std::vector<std::int64_t> peaks;
  const auto after = [](std::int64_t time, const MemoryPoint& point) { return time < point.time_cycles; };
  for (std::size_t i = 0; i + 1 < step_bounds.size(); ++i) {
    const std::int64_t from = step_bounds[i], to = step_bounds[i + 1];
    if (to <= from) continue;
    // The last point at or before the step's start, then every one before its end.
    auto point = std::upper_bound(timeline.begin(), timeline.end(), from, after);
    std::int64_t peak = point == timeline.begin() ? 0 : std::prev(point)->bytes;
    for (; point != timeline.end() && point->time_cycles < to; ++point) peak = std::max(peak, point->bytes);
    peaks.push_back(peak);
  }
  if (peaks.empty()) return whole;
  std::sort(peaks.begin(), peaks.end());
  return peaks[peaks.size() / 2];
}

}  // namespace

MemoryReport MemoryObserver::report(bool record_timeline, const std::vector<std::int64_t>& step_bounds) const {
  MemoryReport report;
  const std::size_t processors = graph_.processors.size();
  // The step peaks read the timeline: it is made when asked for or when there are steps.
  const bool timelines = record_timeline || step_bounds.size() >= 2;
  if (timelines) report.timeline.resize(processors);
  for (std::size_t p = 0; p < processors; ++p) {
    std::vector<MemoryPoint> compute;
    report.peak_bytes.push_back(replay(events_[p], graph_.processors[p].memory_capacity_bytes,
                                       static_cast<std::int32_t>(p), report.out_of_memory,
                                       timelines ? &report.timeline[p] : nullptr, &graph_, &compute));
    report.step_peak_bytes.push_back(timelines ? median_step_peak(report.timeline[p], step_bounds, report.peak_bytes.back())
                                               : report.peak_bytes.back());
    std::int64_t compute_peak = 0;
    for (const auto& point : compute) compute_peak = std::max(compute_peak, point.bytes);
    report.step_compute_peak_bytes.push_back(step_bounds.size() >= 2 ? median_step_peak(compute, step_bounds, compute_peak)
                                                                     : compute_peak);
  }
  if (!record_timeline) report.timeline.clear();
  report.host_peak_bytes = replay(events_.back(), graph_.host_memory_capacity_bytes, kHost, report.out_of_memory,
                                  record_timeline ? &report.host_timeline : nullptr);
  // The first crossing in time first (processors before host memory at equal times).
  std::stable_sort(report.out_of_memory.begin(), report.out_of_memory.end(),
                   [](const OutOfMemory& a, const OutOfMemory& b) { return a.time_cycles < b.time_cycles; });
  return report;
}

}  // namespace pipetwin
