// An accelerator model written outside pipetwin: a MAC array that takes ceil(MACs / macs_per_cycle)
// cycles per layer plus a fixed overhead per layer, with both figures read from the hardware
// file's "accelerator" settings. It is a SystemC module: the simulator makes one per processor,
// as platform.<processor>.accelerator, and asks it for each task's cycles when the task starts.
// The program registers it under the name the hardware file chooses ("mac_array"), builds a 1F1B
// schedule of resnet20 on 1-4 processors, and simulates each, printing cycles and speedup.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/sim/accelerator.hpp"
#include "pipetwin/sim/simulator.hpp"

namespace {

class MacArray final : public pipetwin::sim::AcceleratorModel {
 public:
  MacArray(const sc_core::sc_module_name& name, const pipetwin::sim::AcceleratorSetup& setup)
      : AcceleratorModel(name),
        graph_(setup.graph),
        network_(setup.network),
        macs_per_cycle_(std::stod(setup.settings.at("macs_per_cycle"))),
        layer_overhead_cycles_(std::stoll(setup.settings.at("layer_overhead_cycles"))) {}
  const char* kind() const override { return "MacArray"; }

  std::int64_t task_cycles(const pipetwin::Task& task) override {
    if (task.first_layer < 0) return 0;
    // Forward: the layer's MACs; a backward (BA or BW) the same again; B both; U none here.
    const double passes = task.kind == pipetwin::TaskKind::F || task.kind == pipetwin::TaskKind::RC ? 1
                          : task.kind == pipetwin::TaskKind::B                                    ? 2
                          : task.kind == pipetwin::TaskKind::U                                    ? 0
                                                                                                  : 1;
    std::int64_t cycles = 0;
    for (std::int32_t l = task.first_layer; l <= task.last_layer; ++l) {
      const double macs = network_.layers[static_cast<std::size_t>(l)].forward_macs *
                          static_cast<double>(graph_.samples_per_microbatch) * passes;
      cycles += static_cast<std::int64_t>(std::ceil(macs / macs_per_cycle_)) + layer_overhead_cycles_;
    }
    return cycles;
  }

 private:
  const pipetwin::TaskGraph& graph_;
  const pipetwin::Network& network_;
  double macs_per_cycle_;
  std::int64_t layer_overhead_cycles_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string hardware = argc > 1 ? argv[1] : "mac_array.json";
  try {
    pipetwin::sim::AcceleratorRegistry registry;  // the built-in models, and ours
    registry.add("mac_array", "a MAC array: ceil(MACs / macs_per_cycle) + an overhead per layer",
                 [](const char* name, const pipetwin::sim::AcceleratorSetup& setup) {
                   return std::make_unique<MacArray>(name, setup);
                 });
    std::printf("resnet20, 1f1b, 8 microbatches, on %s (accelerator: mac_array)\n", hardware.c_str());
    std::printf("%3s %14s %14s %9s\n", "P", "total_cycles", "period_cycles", "speedup");
    double one = 0;
    for (int processors = 1; processors <= 4; ++processors) {
      const pipetwin::GraphConfig config = pipetwin::graph_config("resnet20", "1f1b", hardware, processors, 8, 2);
      const pipetwin::TaskGraph graph = pipetwin::make_graph(config);
      const pipetwin::Network network = pipetwin::make_request(config).network;
      pipetwin::SimOptions options;
      options.accelerators = &registry;
      options.network = &network;
      const pipetwin::Result result = pipetwin::simulate(graph, options);
      if (processors == 1) one = static_cast<double>(result.iteration_cycles);
      std::printf("%3d %14lld %14lld %8.2fx\n", processors, static_cast<long long>(result.total_cycles),
                  static_cast<long long>(result.iteration_cycles), one / static_cast<double>(result.iteration_cycles));
    }
  } catch (const pipetwin::Error& error) {
    std::fprintf(stderr, "mac_array_example: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
