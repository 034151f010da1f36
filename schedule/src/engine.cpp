// The analytic engine, the replay of a prediction to observers, and the event log.
#include "pipetwin/schedule/engine.hpp"

#include <algorithm>
#include <tuple>

#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/memory_observer.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/summary_observer.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

Result AnalyticEngine::run(const TaskGraph& graph, const EngineOptions& options) {
  return summarize_replay(graph, evaluate_times(graph), name(), options);
}

Result summarize_replay(const TaskGraph& graph, const std::vector<TaskTiming>& times, const std::string& engine,
                        const EngineOptions& options) {
  // With no one else listening, the summary of the times themselves: the same Result (the
  // conformance test checks it) without replaying every event (a sweep runs thousands).
  if (options.observers.empty()) return summarize(graph, times, engine, options.record_memory_timeline);
  SummaryObserver summary(graph);
  std::vector<EngineObserver*> observers{&summary};
  observers.insert(observers.end(), options.observers.begin(), options.observers.end());
  replay_to_observers(graph, times, observers);
  return summary.result(engine, options.record_memory_timeline);
}

void replay_to_observers(const TaskGraph& g, const std::vector<TaskTiming>& times,
                         const std::vector<EngineObserver*>& observers) {
  if (observers.empty()) return;
  // Sorted by (time, group, rank, step): at one time, ends and frees of tasks that took time come
  // first (group 0); then, in a topological order of the graph (rank), each task's start and
  // allocation, and for a task that took no time its end and free right after (group 1).
  enum What { start, end, alloc, free };
  struct Event {
    std::int64_t time;
    int group;
    std::int32_t rank;
    int step;
    std::int32_t task;
    What what;
    MemoryChange change;  // alloc, free
  };
  std::vector<std::int32_t> rank(g.tasks.size(), 0);
  const auto order = execution_order(g);
  for (std::size_t i = 0; i < order.size(); ++i) rank[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  auto instant = [&](std::int32_t task) {
    const TaskTiming& at = times[static_cast<std::size_t>(task)];
    return at.end_cycles == at.start_cycles;
  };
  std::vector<Event> events;
  for (const auto& t : g.tasks) {
    const TaskTiming& at = times[static_cast<std::size_t>(t.id)];
    const std::int32_t r = rank[static_cast<std::size_t>(t.id)];
    events.push_back({at.start_cycles, 1, r, 0, t.id, start, {}});
    events.push_back({at.end_cycles, instant(t.id) ? 1 : 0, r, instant(t.id) ? 3 : 0, t.id, end, {}});
  }
  for (const auto& e : declared_memory_effects(g, times)) {
    const std::int32_t task = e.change.task;
    const std::int32_t r = rank[static_cast<std::size_t>(task)];
    if (e.allocates) {
      events.push_back({e.change.cycles, 1, r, 1, task, alloc, e.change});
    } else {
      events.push_back({e.change.cycles, instant(task) ? 1 : 0, r, instant(task) ? 4 : 1, task, free, e.change});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.group, a.rank, a.step) < std::tie(b.time, b.group, b.rank, b.step);
  });
  for (auto* o : observers) tell_initial_memory(g, *o);
  for (const auto& e : events) {
    for (auto* o : observers) {
      switch (e.what) {
        case start: o->task_started(e.task, e.time); break;
        case end: o->task_ended(e.task, e.time); break;
        case alloc: o->allocated(e.change); break;
        case free: o->freed(e.change); break;
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

void EventLog::task_started(std::int32_t task, std::int64_t cycles) { of_task(task).push_back({Kind::start, task, 0, cycles, {}}); }
void EventLog::task_ended(std::int32_t task, std::int64_t cycles) { of_task(task).push_back({Kind::end, task, 0, cycles, {}}); }

void EventLog::allocated(const MemoryChange& c) {
  processors_[memory_slot(graph_, c.where)].push_back({Kind::alloc, c.task, c.bytes, c.cycles, c.buffer});
}

void EventLog::freed(const MemoryChange& c) {
  processors_[memory_slot(graph_, c.where)].push_back({Kind::free, c.task, c.bytes, c.cycles, c.buffer});
}

}  // namespace pipetwin
