// The processor module's state machine.
#include "processor_module.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/wait_loss.hpp"

namespace pipetwin::sim {

ProcessorModule::ProcessorModule(const sc_core::sc_module_name& name, std::vector<std::int32_t> queue,
                                 const AcceleratorRegistry& registry, const AcceleratorSetup& setup)
    : sc_core::sc_module(name),
      board("board"),
      memory("memory"),
      ready_in("ready_in"),
      busy("busy", false),
      accelerator_(registry.make(setup.graph.accelerator, "accelerator", setup)),
      queue_(std::move(queue)),
      wake_("wake") {
  ready_in.bind(*this);
  SC_METHOD(step);
}

void ProcessorModule::memory_served(std::int32_t) {
  memory_pending_ = false;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void ProcessorModule::step() {
  try {
    const std::int64_t now = board->now_cycles();
    if (running_ >= 0) {
      if (now < running_until_) {  // woken early
        sc_core::next_trigger(board->cycles(running_until_ - now));
        return;
      }
      if (memory_pending_) {  // its cycles have elapsed, its traffic is not served yet
        sc_core::next_trigger(wake_);
        return;
      }
      set_busy(false);
      const std::int32_t finished = running_;
      running_ = -1;
      finished_any_ = true;
      last_end_ = now;
      board->finish(finished);
    }
    if (next_ < queue_.size() && board->ready(queue_[next_])) {
      running_ = queue_[next_++];
      const Task& task = board->graph().tasks[running_];
      board->start(running_);
      set_busy(true);
      // After a wait, what it cost the caches (wait_loss.hpp): the wait since its previous task.
      const std::int64_t waited = finished_any_ ? now - last_end_ : 0;
      const std::int64_t cycles = accelerator_->task_cycles(task) + wait_loss_cycles(board->graph(), task, waited);
      if (cycles < 0 || cycles > kMaxTotalCycles) {
        throw Error(std::string(accelerator_->name()) + " gave " + describe_task(board->graph(), task) + " " +
                    std::to_string(cycles) + " cycles; a task takes 0 to 2^50");
      }
      if (cycles > board->horizon_cycles() - now) {
        throw Error("cannot simulate: " + describe_task(board->graph(), task) + " would end after cycle " +
                    std::to_string(board->horizon_cycles()) + ", the last this run's clock reaches");
      }
      running_until_ = now + cycles;
      if (memory.size() > 0 && task.memory_cycles > 0) {
        memory_pending_ = true;
        memory->begin(running_, task.memory_cycles, *this);
      }
      sc_core::next_trigger(board->cycles(cycles));
      return;
    }
    sc_core::next_trigger(wake_);
  } catch (...) {
    board->fail(std::current_exception());
  }
}

}  // namespace pipetwin::sim
