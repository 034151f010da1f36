// The SystemC simulator: predicts a Result for a task graph with a cycle-level model of its
// processors and links (docs/design.md). Processors run their tasks in schedule order; links serve
// theirs by their policy; transfers in service on one link medium at once divide its bandwidth,
// so contention shows. Where no bandwidth is shared the result equals the analytic evaluator's
// cycle for cycle.
//
// SystemC's kernel is global to a process: every call runs in the one kernel, spawning dynamic
// processes for the run and killing them after it, so a process may call simulate() any number
// of times (same input, same output). Not thread-safe: run parallel sweeps in processes.
#pragma once
#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct SimOptions {
  bool record_memory_timeline = false;  // Result::memory_timeline (for traces)
};

// Task times only; throws Error listing the blocked tasks when the graph cannot finish.
std::vector<TaskTiming> simulate_times(const TaskGraph& graph);
Result simulate(const TaskGraph& graph, const SimOptions& options = {});

// The simulator as an engine.
class SystemcEngine final : public Engine {
 public:
  std::string name() const override { return "systemc"; }
  bool measures() const override { return false; }
  Result run(const TaskGraph& graph, const EngineOptions& options) override;
};

}  // namespace pipetwin
