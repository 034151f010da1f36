// A memory system shared by several processors (the SM partitions of one GPU): the memory
// traffic of the tasks running on them at the same time shares its bandwidth equally. A task
// ends when both its cycles have elapsed and its memory traffic has been served, so a task whose
// traffic is served alone (or is small enough) takes exactly its cycles, and memory-bound tasks
// that overlap slow each other down. One SC_METHOD process.
#pragma once
#include <vector>

#include "fair_share.hpp"
#include "interfaces.hpp"

namespace pipetwin::sim {

class MemorySystemModule final : public sc_core::sc_module, public memory_if {
 public:
  sc_core::sc_port<task_board_if> board;
  sc_core::sc_export<memory_if> requests;

  SC_HAS_PROCESS(MemorySystemModule);
  MemorySystemModule(const sc_core::sc_module_name& name, std::size_t tasks);
  const char* kind() const override { return "pipetwin::sim::MemorySystemModule"; }

  void begin(std::int32_t task, std::int64_t service_cycles, memory_client_if& client) override;

 private:
  void step();

  FairShare bandwidth_;
  std::vector<memory_client_if*> owner_;  // per task id: whom to tell when its traffic is served
  std::vector<std::int32_t> finished_;    // reused by each step
  sc_core::sc_event wake_;
};

}  // namespace pipetwin::sim
