// The task board: a hierarchical channel holding one run's dependency counters and task times.
// Processors and link media reach it through their `board` ports; it reaches them through its
// `processors` and `media` ports, bound to their exports in processor and medium order.
#pragma once
#include <exception>
#include <vector>

#include "interfaces.hpp"
#include "kernel_session.hpp"
#include "pipetwin/schedule/result.hpp"

namespace pipetwin::sim {

class TaskBoard final : public sc_core::sc_module, public task_board_if {
 public:
  sc_core::sc_port<task_sink_if, 0, sc_core::SC_ZERO_OR_MORE_BOUND> processors;  // [processor]
  sc_core::sc_port<task_sink_if, 0, sc_core::SC_ZERO_OR_MORE_BOUND> media;       // [medium]

  TaskBoard(const sc_core::sc_module_name& name, const TaskGraph& graph, const KernelSession& session,
            std::vector<std::int32_t> medium_of_link);
  const char* kind() const override { return "pipetwin::sim::TaskBoard"; }

  const TaskGraph& graph() const override { return graph_; }
  std::int64_t now_cycles() const override { return session_.now_cycles(); }
  sc_core::sc_time cycles(std::int64_t count) const override { return session_.cycles(count); }
  std::int64_t horizon_cycles() const override { return session_.horizon_cycles(); }
  bool ready(std::int32_t task) const override { return pending_[task] == 0; }
  void start(std::int32_t task) override { times_[task].start_cycles = now_cycles(); }
  void finish(std::int32_t task) override;
  void fail(std::exception_ptr error) override;

  bool done(std::int32_t task) const { return done_[task] != 0; }
  std::size_t finished() const { return finished_; }
  std::exception_ptr error() const { return error_; }
  // Packet mode: transfers made ready by their hop before's first packet (cut-through), not by its end.
  void set_ready_early(std::vector<char> early) { ready_early_ = std::move(early); }
  // After elaboration: each task's sink, looked up once (the ports' lookups cost too much per task).
  void end_of_elaboration() override;
  std::vector<TaskTiming> take_times() { return std::move(times_); }

 private:
  const TaskGraph& graph_;
  const KernelSession& session_;
  std::vector<std::int32_t> medium_of_link_;          // per link: its medium's index in `media`
  std::vector<task_sink_if*> sink_of_task_;          // per task: its processor or link medium
  std::vector<char> ready_early_;                     // per task, or empty
  std::vector<std::int32_t> pending_;                 // unmet dependencies per task
  std::vector<std::int32_t> successor_begin_;         // per task + 1: where its successors start in successors_
  std::vector<std::int32_t> successors_;              // every task's successors, task by task
  std::vector<TaskTiming> times_;
  std::vector<char> done_;
  std::size_t finished_ = 0;
  std::exception_ptr error_;
};

}  // namespace pipetwin::sim
