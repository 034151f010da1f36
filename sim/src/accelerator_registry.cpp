// The accelerator models by name: the built-in fixed-cost and systolic-array models, and those a
// program adds.
#include "pipetwin/sim/accelerator.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "systolic_array_module.hpp"

namespace pipetwin::sim {
namespace {

// Today's processor: a task takes the cycles the cost model gave it (roofline, operator-level or
// calibrated), whatever the layers.
class FixedCostAccelerator final : public AcceleratorModel {
 public:
  explicit FixedCostAccelerator(const sc_core::sc_module_name& name) : AcceleratorModel(name) {}
  const char* kind() const override { return "pipetwin::sim::FixedCostAccelerator"; }
  std::int64_t task_cycles(const Task& task) override { return task.cost_cycles; }
};

}  // namespace

AcceleratorRegistry::AcceleratorRegistry() {
  add("fixed", "each task takes the cycles in the graph (the cost model's: roofline, operator or calibrated)",
      [](const char* name, const AcceleratorSetup&) { return std::make_unique<FixedCostAccelerator>(name); });
  add("systolic", "a systolic array: each task's GEMMs in folds of rows x cols cells (os, ws or is dataflow)",
      [](const char* name, const AcceleratorSetup& setup) { return std::make_unique<SystolicArrayModule>(name, setup); });
}

void AcceleratorRegistry::add(const std::string& name, const std::string& description, AcceleratorFactory factory) {
  if (name.empty()) throw Error("an accelerator model needs a name");
  if (!factory) throw Error("accelerator model '" + name + "' has no factory");
  if (has(name)) throw Error("accelerator model '" + name + "' is registered already");
  entries_[name] = {description, std::move(factory)};
}

std::vector<std::string> AcceleratorRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

const std::string& AcceleratorRegistry::description(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(unknown_name_message("accelerator model", name, names()));
  return it->second.description;
}

void AcceleratorRegistry::check(const std::string& name) const {
  if (!has(name)) {
    throw Error(unknown_name_message("accelerator model", name, names()) +
                " (a plug-in's program adds its model to the registry it passes to the simulator)");
  }
}

std::unique_ptr<AcceleratorModel> AcceleratorRegistry::make(const std::string& name, const char* module_name,
                                                             const AcceleratorSetup& setup) const {
  check(name);
  auto model = entries_.at(name).factory(module_name, setup);
  if (!model) throw Error("accelerator model '" + name + "': its factory made nothing");
  return model;
}

}  // namespace pipetwin::sim
