// The systolic-array accelerator module.
#include "systolic_array_module.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin::sim {

SystolicArrayModule::SystolicArrayModule(const sc_core::sc_module_name& name, const AcceleratorSetup& setup)
    : AcceleratorModel(name),
      graph_(setup.graph),
      network_(setup.network),
      spec_(systolic_spec_from_settings(setup.settings, setup.graph.clock_hz)) {}

std::int64_t SystolicArrayModule::task_cycles(const Task& task) {
  if (task.first_layer < 0) return 0;
  if (task.last_layer >= static_cast<std::int32_t>(network_.size())) {
    throw Error(std::string(name()) + ": " + describe_task(graph_, task) + " covers layer " +
                std::to_string(task.last_layer) + ", beyond network " + network_.name + "'s " +
                std::to_string(network_.size()) + " layers");
  }
  // A BA part runs its slice of the microbatch's samples at its first layer, as the executors do.
  const std::int64_t n = graph_.samples_per_microbatch;
  const SampleRange part = part_samples(task, n);
  std::int64_t cycles = 0;
  for (std::int32_t l = task.first_layer; l <= task.last_layer; ++l) {
    const std::int64_t samples = task.kind == TaskKind::BA && l == task.first_layer ? part.end - part.begin : n;
    cycles += systolic_layer_cycles(network_.layers[static_cast<std::size_t>(l)], task.kind, samples, spec_);
  }
  return cycles;
}

}  // namespace pipetwin::sim
