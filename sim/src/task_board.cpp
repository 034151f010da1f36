// The task board channel.
#include "task_board.hpp"

namespace pipetwin::sim {

TaskBoard::TaskBoard(const sc_core::sc_module_name& name, const TaskGraph& graph, const KernelSession& session,
                     std::vector<std::int32_t> medium_of_link)
    : sc_core::sc_module(name),
      processors("processors"),
      media("media"),
      graph_(graph),
      session_(session),
      medium_of_link_(std::move(medium_of_link)),
      pending_(graph.tasks.size(), 0),
      successor_begin_(graph.tasks.size() + 1, 0),
      times_(graph.tasks.size()),
      done_(graph.tasks.size(), 0) {
  for (const auto& t : graph.tasks) {
    pending_[t.id] = static_cast<std::int32_t>(t.deps.size());
    for (const auto& dep : t.deps) ++successor_begin_[dep.task + 1];
  }
  for (std::size_t i = 1; i < successor_begin_.size(); ++i) successor_begin_[i] += successor_begin_[i - 1];
  successors_.resize(static_cast<std::size_t>(successor_begin_.back()));
  std::vector<std::int32_t> filled(successor_begin_.begin(), successor_begin_.end() - 1);
  for (const auto& t : graph.tasks) {
    for (const auto& dep : t.deps) successors_[static_cast<std::size_t>(filled[dep.task]++)] = t.id;
  }
}

void TaskBoard::finish(std::int32_t task) {
  times_[task].end_cycles = now_cycles();
  done_[task] = 1;
  ++finished_;
  for (std::int32_t i = successor_begin_[task]; i < successor_begin_[task + 1]; ++i) {
    const std::int32_t next = successors_[static_cast<std::size_t>(i)];
    if (--pending_[next] != 0) continue;
    if (!ready_early_.empty() && ready_early_[next]) continue;  // already admitted by its first packet
    sink_of_task_[next]->task_ready(next);
  }
}

void TaskBoard::end_of_elaboration() {
  sink_of_task_.resize(graph_.tasks.size());
  for (const auto& t : graph_.tasks) {
    sink_of_task_[t.id] = t.placement == Placement::processor ? processors[t.resource]
                                                               : media[medium_of_link_[t.resource]];
  }
}

void TaskBoard::fail(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  sc_core::sc_stop();
}

}  // namespace pipetwin::sim
