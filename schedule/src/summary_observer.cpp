// The summary from the events an engine reports (see summary_observer.hpp).
#include "pipetwin/schedule/summary_observer.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/summary.hpp"

namespace pipetwin {

SummaryObserver::SummaryObserver(const TaskGraph& graph)
    : graph_(graph), times_(graph.tasks.size()), starts_(graph.tasks.size(), 0), ends_(graph.tasks.size(), 0),
      memory_(graph) {}

void SummaryObserver::task_started(std::int32_t task, std::int64_t cycles) {
  times_[static_cast<std::size_t>(task)].start_cycles = cycles;
  ++starts_[static_cast<std::size_t>(task)];
}

void SummaryObserver::task_ended(std::int32_t task, std::int64_t cycles) {
  times_[static_cast<std::size_t>(task)].end_cycles = cycles;
  ++ends_[static_cast<std::size_t>(task)];
}

Result SummaryObserver::result(const std::string& engine, bool record_memory_timeline) const {
  for (std::size_t i = 0; i < times_.size(); ++i) {
    if (starts_[i] != 1 || ends_[i] != 1) {
      throw Error("internal: the " + engine + " engine reported " + describe_task(graph_, graph_.tasks[i]) + " started " +
                  std::to_string(starts_[i]) + " and ended " + std::to_string(ends_[i]) + " times");
    }
  }
  return summarize(graph_, times_, engine, memory_.report(record_memory_timeline, steady_step_bounds(graph_, times_)));
}

}  // namespace pipetwin
