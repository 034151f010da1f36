// What the processes of one simulation run share: dependency counters, task times, and who to
// wake when a task becomes ready. Times are cycles since the run began (one cycle is one unit of
// SystemC's time resolution).
#pragma once
#include <cstdint>
#include <vector>

#include <systemc>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::sim {

class ProcessorModel;
class LinkMedium;

class RunState {
 public:
  explicit RunState(const TaskGraph& graph);

  const TaskGraph& graph() const { return graph_; }
  std::int64_t now_cycles() const {
    return static_cast<std::int64_t>((sc_core::sc_time_stamp() - base_).value());
  }
  bool ready(std::int32_t task) const { return pending_[task] == 0; }
  bool done(std::int32_t task) const { return done_[task] != 0; }
  std::size_t finished() const { return finished_; }
  const std::vector<TaskTiming>& times() const { return times_; }
  std::vector<TaskTiming> take_times() { return std::move(times_); }

  void bind(std::vector<ProcessorModel*> processors, std::vector<LinkMedium*> link_media);
  LinkMedium* medium_of_link(std::int32_t link) const { return link_media_[link]; }
  void start(std::int32_t task) { times_[task].start_cycles = now_cycles(); }
  // Records the end, then makes every successor whose last dependency this was ready.
  void finish(std::int32_t task);

 private:
  const TaskGraph& graph_;
  sc_core::sc_time base_;
  std::vector<std::int32_t> pending_;                 // unmet dependencies per task
  std::vector<std::vector<std::int32_t>> successors_;
  std::vector<TaskTiming> times_;
  std::vector<char> done_;
  std::vector<ProcessorModel*> processors_;           // per processor
  std::vector<LinkMedium*> link_media_;               // per link: the medium it belongs to
  std::size_t finished_ = 0;
};

}  // namespace pipetwin::sim
