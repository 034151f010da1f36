// A processor as a SystemC method process: a state machine that is either running a task (its
// next trigger is the task's end) or waiting for its next task's dependencies (its next trigger
// is a wake-up from a finishing dependency).
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "processor_model.hpp"

namespace pipetwin::sim {

ProcessorModel::ProcessorModel(RunState& run, std::vector<std::int32_t> queue, WorkerLease& lease)
    : run_(run), queue_(std::move(queue)), worker_(lease.borrow(*this)) {
  wake();
}

void ProcessorModel::step() {
  if (running_ >= 0) {  // only the running task's end triggers us while it runs
    run_.finish(running_);
    running_ = -1;
  }
  if (next_ < queue_.size() && run_.ready(queue_[next_])) {
    running_ = queue_[next_++];
    run_.start(running_);
    sc_core::next_trigger(sc_core::sc_time::from_value(
        static_cast<sc_dt::uint64>(run_.graph().tasks[running_].cost_cycles)));
    return;
  }
  sc_core::next_trigger(worker_.wake());
}

}  // namespace pipetwin::sim
