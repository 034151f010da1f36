// A systolic array as a processor's accelerator module: when its processor starts a task, it
// computes the task's cycles from the layers' GEMM shapes, its rows x cols, dataflow, SRAMs and
// DRAM bandwidth (pipetwin/models/systolic_array.hpp), for the task's samples.
#pragma once
#include "pipetwin/models/systolic_array.hpp"
#include "pipetwin/sim/accelerator.hpp"

namespace pipetwin::sim {

class SystolicArrayModule final : public AcceleratorModel {
 public:
  SystolicArrayModule(const sc_core::sc_module_name& name, const AcceleratorSetup& setup);
  const char* kind() const override { return "pipetwin::sim::SystolicArrayModule"; }
  std::int64_t task_cycles(const Task& task) override;
  const SystolicSpec& spec() const { return spec_; }

 private:
  const TaskGraph& graph_;
  const Network& network_;
  SystolicSpec spec_;
};

}  // namespace pipetwin::sim
