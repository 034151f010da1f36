// A memory system shared by several processors (the SM partitions of one GPU): the memory
// traffic of the tasks running on them at the same time shares its bandwidth equally. A task
// ends when both its cost has elapsed and its memory traffic has been served, so a task whose
// traffic is served alone (or is small enough) takes exactly its cost, and memory-bound tasks
// that overlap slow each other down.
#pragma once
#include <vector>

#include <systemc>

#include "fair_share.hpp"
#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class MemorySystem final : public Steppable {
 public:
  MemorySystem(RunState& run, WorkerLease& lease);

  // `task` (running on `processor`) starts `service_cycles` of memory traffic now.
  void begin(std::int32_t task, std::int64_t service_cycles, ProcessorModel* processor);

 private:
  void step() override;

  RunState& run_;
  FairShare bandwidth_;
  std::vector<ProcessorModel*> owner_;  // per task id: whom to tell when its traffic is served
  Worker& worker_;
};

}  // namespace pipetwin::sim
