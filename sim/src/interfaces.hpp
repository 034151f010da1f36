// The interfaces between the simulator's modules (bound through ports and exports in Platform):
// the task board that keeps dependencies and times, the modules it tells that a task is ready,
// and a shared memory system the processors send their traffic to.
#pragma once
#include <cstdint>

#include <systemc>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::sim {

// A processor or a link medium: told when one of its tasks has no dependency left.
class task_sink_if : public virtual sc_core::sc_interface {
 public:
  virtual void task_ready(std::int32_t task) = 0;
};

// Dependencies, start and end times of every task of the run.
class task_board_if : public virtual sc_core::sc_interface {
 public:
  virtual const TaskGraph& graph() const = 0;
  virtual std::int64_t now_cycles() const = 0;
  virtual sc_core::sc_time cycles(std::int64_t count) const = 0;  // a duration
  virtual std::int64_t horizon_cycles() const = 0;  // the last cycle the run's clock reaches
  virtual bool ready(std::int32_t task) const = 0;
  virtual void start(std::int32_t task) = 0;
  // Records the end and tells the sink of every task whose last dependency this was.
  virtual void finish(std::int32_t task) = 0;
  // A model failed inside a process: the run stops and simulate() throws this.
  virtual void fail(std::exception_ptr error) = 0;
};

// Told when a task's memory traffic has been served.
class memory_client_if {
 public:
  virtual void memory_served(std::int32_t task) = 0;

 protected:
  ~memory_client_if() = default;
};

// A memory system shared by several processors.
class memory_if : public virtual sc_core::sc_interface {
 public:
  virtual void begin(std::int32_t task, std::int64_t service_cycles, memory_client_if& client) = 0;
};

}  // namespace pipetwin::sim
