// A processor: runs its tasks one at a time in schedule order, each as soon as its
// dependencies have finished, for the task's cost in cycles. It runs as a SystemC method process
// borrowed from the worker pool.
#pragma once
#include <vector>

#include <systemc>

#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class ProcessorModel final : public Steppable {
 public:
  // Borrows a worker from `lease` and starts at time zero of the run.
  ProcessorModel(RunState& run, std::vector<std::int32_t> queue, WorkerLease& lease);
  ProcessorModel(const ProcessorModel&) = delete;
  ProcessorModel& operator=(const ProcessorModel&) = delete;
  ~ProcessorModel() = default;

  void wake() { worker_.wake().notify(sc_core::SC_ZERO_TIME); }
  // The task it is stuck before, or -1 when it ran everything.
  std::int32_t blocked_task() const { return next_ < queue_.size() ? queue_[next_] : -1; }

 private:
  void step() override;

  RunState& run_;
  std::vector<std::int32_t> queue_;  // task ids in schedule order
  std::size_t next_ = 0;
  std::int32_t running_ = -1;
  Worker& worker_;
};

}  // namespace pipetwin::sim
