// The SystemC simulator: predicts a Result for a task graph with a cycle-level model of its
// processors and links (docs/simulator.md). Each run elaborates its own module hierarchy
// (platform: a task board, a processor module per processor with its accelerator model, a link
// medium module per link or shared group, shared memory systems) in a fresh SystemC context, and
// runs it from time zero at the hardware's clock period. Processors run their tasks in schedule
// order for the cycles their accelerator model gives; links serve theirs by their policy;
// transfers in service on one link medium at once divide its bandwidth, so contention shows.
// With the fixed accelerator and no bandwidth shared, the result equals the analytic evaluator's
// cycle for cycle.
//
// SystemC's context is global to a process: simulate() may be called any number of times, one
// at a time (not from two threads at once: run parallel sweeps in processes).
#pragma once
#include <string>

#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

namespace sim {
class AcceleratorRegistry;
}

struct SimOptions {
  bool record_memory_timeline = false;  // Result::memory_timeline (for traces)
  // Where the accelerator models come from (graph.accelerator names one); null: the built-in
  // ones (fixed, systolic).
  const sim::AcceleratorRegistry* accelerators = nullptr;
  // The network the graph trains, for accelerator models that compute from its layers; null: the
  // network the graph names (graph.model and its model.* parameters) is built again.
  const Network* network = nullptr;
  // Links served packet by packet (packets of packet_bytes, round robin, credit-based flow control
  // with packet_credits receive buffers per link, 0: enough for the link's round trip) instead of
  // the fluid model (docs/simulator.md, "Links").
  bool packet_links = false;
  std::int64_t packet_bytes = 4096;
  std::int32_t packet_credits = 0;
  // A VCD file of each processor's busy signal and each link medium's transfers in service, in
  // SystemC's own format (empty: none). The file is written as the simulation runs.
  std::string vcd_path;
};

// Task times only; throws Error listing the blocked tasks when the graph cannot finish.
std::vector<TaskTiming> simulate_times(const TaskGraph& graph, const SimOptions& options = {});
Result simulate(const TaskGraph& graph, const SimOptions& options = {});

// The simulator as an engine.
class SystemcEngine final : public Engine {
 public:
  explicit SystemcEngine(SimOptions options = {}) : options_(std::move(options)) {}
  std::string name() const override { return "systemc"; }
  bool measures() const override { return false; }
  Result run(const TaskGraph& graph, const EngineOptions& options) override;

 private:
  SimOptions options_;
};

}  // namespace pipetwin
