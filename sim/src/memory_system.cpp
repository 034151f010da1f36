// A shared memory system as a SystemC method process.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "memory_system.hpp"

#include "processor_model.hpp"

namespace pipetwin::sim {

MemorySystem::MemorySystem(RunState& run, WorkerLease& lease)
    : run_(run), owner_(run.graph().tasks.size(), nullptr), worker_(lease.borrow(*this)) {}

void MemorySystem::begin(std::int32_t task, std::int64_t service_cycles, ProcessorModel* processor) {
  bandwidth_.advance(run_.now_cycles());  // the others were served at the old share until now
  bandwidth_.add(task, service_cycles);
  owner_[task] = processor;
  worker_.wake().notify(sc_core::SC_ZERO_TIME);
}

void MemorySystem::step() {
  const std::int64_t now = run_.now_cycles();
  bandwidth_.advance(now);
  for (const auto task : bandwidth_.take_finished()) owner_[task]->memory_served();
  const std::int64_t next = bandwidth_.next_completion(now);
  worker_.wake_within(next < 0 ? -1 : next - now);
}

}  // namespace pipetwin::sim
