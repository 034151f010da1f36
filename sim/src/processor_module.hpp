// A processor: runs its tasks one at a time in schedule order, each as soon as its dependencies
// have finished, for the cycles its accelerator model gives (the graph's cost, or a systolic
// array's count from the layers) and, after a wait, the graph's wait loss (wait_loss.hpp); on a
// shared memory system, also until the task's memory traffic has been served. One SC_METHOD
// process, a state machine: running a task (next trigger: its end, or the memory system's answer)
// or waiting for the next task's dependencies (next trigger: the board's wake-up through
// `ready_in`).
#pragma once
#include <memory>
#include <vector>

#include "interfaces.hpp"
#include "pipetwin/sim/accelerator.hpp"

namespace pipetwin::sim {

class ProcessorModule final : public sc_core::sc_module, public task_sink_if, public memory_client_if {
 public:
  sc_core::sc_port<task_board_if> board;
  sc_core::sc_port<memory_if, 1, sc_core::SC_ZERO_OR_MORE_BOUND> memory;  // a shared memory system, if any
  sc_core::sc_export<task_sink_if> ready_in;
  sc_core::sc_signal<bool> busy;  // for VCD traces: a task is running (written only when traced)

  SC_HAS_PROCESS(ProcessorModule);
  // `queue`: the processor's task ids in schedule order. Makes its accelerator child "accelerator".
  ProcessorModule(const sc_core::sc_module_name& name, std::vector<std::int32_t> queue,
                  const AcceleratorRegistry& registry, const AcceleratorSetup& setup);
  const char* kind() const override { return "pipetwin::sim::ProcessorModule"; }

  void trace_busy() { traced_ = true; }
  // The task it is stuck before, or -1 when it ran everything.
  std::int32_t blocked_task() const { return next_ < queue_.size() ? queue_[next_] : -1; }

 private:
  void task_ready(std::int32_t) override { wake_.notify(sc_core::SC_ZERO_TIME); }
  void memory_served(std::int32_t) override;
  void step();
  void set_busy(bool value) {
    if (traced_) busy.write(value);
  }

  std::unique_ptr<AcceleratorModel> accelerator_;
  std::vector<std::int32_t> queue_;
  std::size_t next_ = 0;
  std::int32_t running_ = -1;
  std::int64_t running_until_ = 0;  // when its cycles have elapsed
  bool memory_pending_ = false;     // its memory traffic is still being served
  bool finished_any_ = false;       // it has ended a task (so a wait before the next counts)
  std::int64_t last_end_ = 0;       // when its latest task ended
  bool traced_ = false;
  sc_core::sc_event wake_;
};

}  // namespace pipetwin::sim
