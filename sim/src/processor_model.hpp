// A processor: runs its tasks one at a time in schedule order, each as soon as its
// dependencies have finished, for the task's cost in cycles; on a shared memory system, also
// until the task's memory traffic has been served. It runs as a SystemC method process borrowed
// from the worker pool.
#pragma once
#include <vector>

#include <systemc>

#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class MemorySystem;

class ProcessorModel final : public Steppable {
 public:
  // Borrows a worker from `lease` and starts at time zero of the run. `memory` may be null.
  ProcessorModel(RunState& run, std::vector<std::int32_t> queue, MemorySystem* memory,
                 WorkerLease& lease);

  void wake() { worker_.wake().notify(sc_core::SC_ZERO_TIME); }
  void memory_served() {
    memory_pending_ = false;
    wake();
  }
  // The task it is stuck before, or -1 when it ran everything.
  std::int32_t blocked_task() const { return next_ < queue_.size() ? queue_[next_] : -1; }

 private:
  void step() override;

  RunState& run_;
  std::vector<std::int32_t> queue_;  // task ids in schedule order
  MemorySystem* memory_;
  std::size_t next_ = 0;
  std::int32_t running_ = -1;
  std::int64_t running_until_ = 0;   // when its cost has elapsed
  bool memory_pending_ = false;      // its memory traffic is still being served
  Worker& worker_;
};

}  // namespace pipetwin::sim
