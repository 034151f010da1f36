// The plug-in point of the simulator's processors (docs/accelerators.md): each processor module
// holds an accelerator model, a SystemC module that says how many cycles a task takes when the
// processor starts it. "fixed" (the graph's cost_cycles: the roofline, operator or calibrated
// cost) and "systolic" (a systolic array, from the layers' shapes) are built in; a user's model is
// a class derived from AcceleratorModel, added to an AcceleratorRegistry under a name, and chosen
// by a hardware file's "accelerator": {"model": "<name>", ...settings}. There is no global
// registry: a program makes one and passes it to simulate() (SimOptions::accelerators).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::sim {

// What an accelerator model is built from: the graph being simulated, the network it trains
// (the layers' shapes), the processor it serves and its settings from the hardware file.
struct AcceleratorSetup {
  const TaskGraph& graph;
  const Network& network;
  std::int32_t processor;
  const std::map<std::string, std::string>& settings;  // graph.accelerator_settings
};

class AcceleratorModel : public sc_core::sc_module {
 public:
  explicit AcceleratorModel(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {}
  // Cycles of the graph's clock that `task` (a compute task of this processor) takes, asked when
  // the processor starts it. Throw pipetwin::Error for a task the model cannot run.
  virtual std::int64_t task_cycles(const Task& task) = 0;
};

// Makes a model named `name` (pass it to the module's constructor as sc_module_name).
using AcceleratorFactory =
    std::function<std::unique_ptr<AcceleratorModel>(const char* name, const AcceleratorSetup& setup)>;

class AcceleratorRegistry {
 public:
  AcceleratorRegistry();  // knows "fixed" and "systolic"

  // Throws when `name` is taken.
  void add(const std::string& name, const std::string& description, AcceleratorFactory factory);
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  std::vector<std::string> names() const;
  const std::string& description(const std::string& name) const;  // throws for an unknown name
  void check(const std::string& name) const;  // throws for an unknown name, listing the known ones
  // Throws for an unknown name, listing the known ones.
  std::unique_ptr<AcceleratorModel> make(const std::string& name, const char* module_name,
                                         const AcceleratorSetup& setup) const;

 private:
  struct Entry {
    std::string description;
    AcceleratorFactory factory;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace pipetwin::sim
