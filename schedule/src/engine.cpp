// The analytic engine, the replay of a prediction to observers, and the event log.
#include "pipetwin/schedule/engine.hpp"

#include <algorithm>
#include <tuple>

#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

Result AnalyticEngine::run(const TaskGraph& graph, const EngineOptions& options) {
  std::vector<TaskTiming> times = evaluate_times(graph);
  replay_to_observers(graph, times, options.observers);
  return summarize(graph, std::move(times), name(), options.record_memory_timeline);
}

void replay_to_observers(const TaskGraph& g, const std::vector<TaskTiming>& times,
                         const std::vector<EngineObserver*>& observers) {
  if (observers.empty()) return;
  // Sorted by (time, group, rank, step): at one time, ends and frees of tasks that took time come
  // first (group 0); then, in a topological order of the graph (rank), each task's start and
  // allocation, and for a task that took no time its end and free right after (group 1).
  enum What { end, free_bytes, host_free, start, alloc_bytes, host_alloc };
  struct Event {
    std::int64_t time;
    int group;
    std::int32_t rank;
    int step;
    std::int32_t task;
    What what;
  };
  std::vector<std::int32_t> rank(g.tasks.size(), 0);
  const auto order = execution_order(g);
  for (std::size_t i = 0; i < order.size(); ++i) rank[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  std::vector<Event> events;
  for (const auto& t : g.tasks) {
    const TaskTiming& at = times[static_cast<std::size_t>(t.id)];
    const std::int32_t r = rank[static_cast<std::size_t>(t.id)];
    const bool instant = at.end_cycles == at.start_cycles;
    const int end_group = instant ? 1 : 0, end_step = instant ? 3 : 0;
    events.push_back({at.start_cycles, 1, r, 0, t.id, start});
    events.push_back({at.end_cycles, end_group, r, end_step, t.id, end});
    if (memory_owner(g, t) >= 0) {
      if (t.alloc_bytes > 0) events.push_back({at.start_cycles, 1, r, 1, t.id, alloc_bytes});
      if (t.free_bytes > 0) events.push_back({at.end_cycles, end_group, r, end_step + 1, t.id, free_bytes});
    }
    if (t.kind == TaskKind::OFF) events.push_back({at.start_cycles, 1, r, 2, t.id, host_alloc});
    if (t.kind == TaskKind::ON) events.push_back({at.end_cycles, end_group, r, end_step + 2, t.id, host_free});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.group, a.rank, a.step) < std::tie(b.time, b.group, b.rank, b.step);
  });
  for (std::size_t p = 0; p < g.processors.size(); ++p) {
    for (auto* o : observers) o->allocated(static_cast<std::int32_t>(p), g.processors[p].static_bytes, -1, 0);
  }
  for (const auto& e : events) {
    const Task& t = g.tasks[static_cast<std::size_t>(e.task)];
    for (auto* o : observers) {
      switch (e.what) {
        case start: o->task_started(e.task, e.time); break;
        case end: o->task_ended(e.task, e.time); break;
        case alloc_bytes: o->allocated(memory_owner(g, t), t.alloc_bytes, e.task, e.time); break;
        case free_bytes: o->freed(memory_owner(g, t), t.free_bytes, e.task, e.time); break;
        case host_alloc: o->allocated(kHost, t.bytes, e.task, e.time); break;
        case host_free: o->freed(kHost, t.bytes, e.task, e.time); break;
      }
    }
  }
}

EventLog::EventLog(const TaskGraph& graph)
    : graph_(graph), processors_(graph.processors.size() + 1), links_(graph.links.size()) {}

std::vector<EventLog::Event>& EventLog::of_task(std::int32_t task) {
  const Task& t = graph_.tasks[static_cast<std::size_t>(task)];
  return t.placement == Placement::processor ? processors_[static_cast<std::size_t>(t.resource)]
                                             : links_[static_cast<std::size_t>(t.resource)];
}

void EventLog::task_started(std::int32_t task, std::int64_t cycles) { of_task(task).push_back({Kind::start, task, 0, cycles}); }
void EventLog::task_ended(std::int32_t task, std::int64_t cycles) { of_task(task).push_back({Kind::end, task, 0, cycles}); }

void EventLog::allocated(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) {
  processors_[where == kHost ? processors_.size() - 1 : static_cast<std::size_t>(where)].push_back({Kind::alloc, task, bytes, cycles});
}

void EventLog::freed(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) {
  processors_[where == kHost ? processors_.size() - 1 : static_cast<std::size_t>(where)].push_back({Kind::free, task, bytes, cycles});
}

}  // namespace pipetwin
