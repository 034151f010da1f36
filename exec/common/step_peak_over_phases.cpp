// A steady step's peak memory over the phases a run's processors can take against each other
// (step_peak_over_phases.hpp): the graph predicted again with each processor paced a few percent
// off its price, each way.
#include "pipetwin/exec/step_peak_over_phases.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

TaskGraph with_processor_paced(const TaskGraph& graph, std::int32_t processor, double factor) {
  if (!(std::isfinite(factor) && factor > 0)) {
    throw Error("with_processor_paced: the factor must be a positive number, got " + std::to_string(factor));
  }
  if (processor < 0 || static_cast<std::size_t>(processor) >= graph.processors.size()) {
    throw Error("with_processor_paced: no processor " + std::to_string(processor) + " in a graph of " +
                std::to_string(graph.processors.size()));
  }
  const auto paced = [factor](std::int64_t cycles) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(cycles) * factor - 1e-9));
  };
  TaskGraph out = graph;
  for (auto& t : out.tasks) {
    if (t.placement != Placement::processor || t.resource != processor) continue;
    t.cost_cycles = paced(t.cost_cycles);
    t.memory_cycles = std::min(t.cost_cycles, paced(t.memory_cycles));
  }
  return out;
}

std::int64_t step_peak_over_phases(const TaskGraph& graph, const std::function<Result(const TaskGraph&)>& predict,
                                   std::int64_t nominal_bytes, double fraction) {
  if (!(fraction >= 0 && fraction < 1)) {
    throw Error("step_peak_over_phases: the fraction must be in [0, 1), got " + std::to_string(fraction));
  }
  std::int64_t largest = nominal_bytes;
  if (fraction == 0 || graph.processors.size() < 2) return largest;
  for (std::size_t p = 0; p < graph.processors.size(); ++p) {
    for (const double factor : {1 + fraction, 1 - fraction}) {
      const Result paced = predict(with_processor_paced(graph, static_cast<std::int32_t>(p), factor));
      largest = std::max(largest, max_peak(paced.step_peak_memory_bytes));
    }
  }
  return largest;
}

}  // namespace pipetwin
