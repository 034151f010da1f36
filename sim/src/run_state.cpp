// Shared state of one simulation run.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "run_state.hpp"

#include "link_medium.hpp"
#include "processor_model.hpp"

namespace pipetwin::sim {

RunState::RunState(const TaskGraph& graph)
    : graph_(graph),
      base_(sc_core::sc_time_stamp()),
      pending_(graph.tasks.size(), 0),
      successors_(graph.tasks.size()),
      times_(graph.tasks.size()),
      done_(graph.tasks.size(), 0) {
  for (const auto& t : graph.tasks) {
    pending_[t.id] = static_cast<std::int32_t>(t.deps.size());
    for (const auto& dep : t.deps) successors_[dep.task].push_back(t.id);
  }
}

void RunState::bind(std::vector<ProcessorModel*> processors, std::vector<LinkMedium*> link_media) {
  processors_ = std::move(processors);
  link_media_ = std::move(link_media);
}

void RunState::finish(std::int32_t task) {
  times_[task].end_cycles = now_cycles();
  done_[task] = 1;
  ++finished_;
  for (const auto next : successors_[task]) {
    if (--pending_[next] != 0) continue;
    const Task& t = graph_.tasks[next];
    if (t.placement == Placement::processor) {
      processors_[t.resource]->wake();
    } else {
      link_media_[t.resource]->arrive(next);
    }
  }
}

}  // namespace pipetwin::sim
