// The top of the simulator's module hierarchy for one run (docs/simulator.md, "Modules"):
//
//   platform                     Platform
//     board                      TaskBoard: dependencies and times (a hierarchical channel)
//     <processor>                ProcessorModule, one per processor, named as in the graph
//       accelerator              its AcceleratorModel (fixed, systolic or a plug-in)
//     <link or shared group>     LinkMediumModule, one per medium
//     memory_system_<k>          MemorySystemModule, per shared memory system
//
// Processors and media reach the board through their `board` ports; the board reaches them
// through its `processors` and `media` multiports, bound to their `ready_in` exports; processors
// on a shared memory system reach it through their `memory` ports.
#pragma once
#include <memory>
#include <vector>

#include "link_medium.hpp"
#include "memory_system.hpp"
#include "processor_module.hpp"
#include "task_board.hpp"

namespace pipetwin::sim {

class Platform final : public sc_core::sc_module {
 public:
  // `packets`: the media serve transfers packet by packet with these settings; null: fluid.
  Platform(const sc_core::sc_module_name& name, const TaskGraph& graph, const KernelSession& session,
           const AcceleratorRegistry& registry, const Network& network, const PacketSettings* packets);
  const char* kind() const override { return "pipetwin::sim::Platform"; }

  // Adds each processor's busy signal and each medium's transfers in service to `file`.
  void add_traces(sc_core::sc_trace_file* file);  // not trace(): sc_object::trace is virtual
  TaskBoard& board() { return *board_; }
  const std::vector<std::unique_ptr<ProcessorModule>>& processors() const { return processors_; }

 private:
  // Packet mode: each link's receive buffers, and the hops of routes that cut through.
  void plan_packets(const TaskGraph& graph, const PacketSettings& settings, const std::vector<std::int32_t>& medium_of_link);

  std::vector<std::int32_t> queue_position_;  // per task: its position in its link's order
  std::vector<std::int32_t> in_order_slot_;   // per task: its link's slot in its medium, or -1 (shared)
  PacketNetwork packet_network_;              // packet mode: what the media share
  std::unique_ptr<TaskBoard> board_;
  std::vector<std::unique_ptr<ProcessorModule>> processors_;
  std::vector<std::unique_ptr<LinkMediumModule>> media_;
  std::vector<std::unique_ptr<MemorySystemModule>> memory_systems_;
};

// A SystemC object name for `text`: letters, digits and '_' kept, anything else '_'.
std::string module_name_for(const std::string& text);

}  // namespace pipetwin::sim
