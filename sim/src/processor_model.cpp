// A processor as a SystemC method process: a state machine that is either running a task (its
// next trigger is the task's end, or the memory system saying its traffic is served) or waiting
// for its next task's dependencies (its next trigger is a wake-up from a finishing dependency).
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "processor_model.hpp"

#include "memory_system.hpp"

namespace pipetwin::sim {

ProcessorModel::ProcessorModel(RunState& run, std::vector<std::int32_t> queue, MemorySystem* memory,
                               WorkerLease& lease)
    : run_(run), queue_(std::move(queue)), memory_(memory), worker_(lease.borrow(*this)) {
  wake();
}

void ProcessorModel::step() {
  if (running_ >= 0) {
    if (run_.now_cycles() < running_until_ || memory_pending_) {
      // Woken early, or the cost has elapsed but the memory traffic is not served yet.
      if (run_.now_cycles() < running_until_) {
        sc_core::next_trigger(sc_core::sc_time::from_value(
            static_cast<sc_dt::uint64>(running_until_ - run_.now_cycles())));
      } else {
        sc_core::next_trigger(worker_.wake());
      }
      return;
    }
    run_.finish(running_);
    running_ = -1;
  }
  if (next_ < queue_.size() && run_.ready(queue_[next_])) {
    running_ = queue_[next_++];
    const Task& task = run_.graph().tasks[running_];
    run_.start(running_);
    running_until_ = run_.now_cycles() + task.cost_cycles;
    if (memory_ != nullptr && task.memory_cycles > 0) {
      memory_pending_ = true;
      memory_->begin(running_, task.memory_cycles, this);
    }
    sc_core::next_trigger(sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(task.cost_cycles)));
    return;
  }
  sc_core::next_trigger(worker_.wake());
}

}  // namespace pipetwin::sim
