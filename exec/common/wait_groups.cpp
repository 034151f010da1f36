// Tasks grouped by the wait before them on their processor (wait_groups.hpp).
#include "wait_groups.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

std::string wait_group_label(double wait_s) {
  if (wait_s < 0.5e-3) return "wait < 0.5 ms";
  if (wait_s < 5e-3) return "wait 0.5-5 ms";
  if (wait_s < 20e-3) return "wait 5-20 ms";
  return "wait >= 20 ms";
}

std::vector<std::string> wait_groups(const TaskGraph& graph, const Result& run) {
  if (run.tasks.size() != graph.tasks.size()) {
    throw Error("internal: a run's timings (" + std::to_string(run.tasks.size()) + ") are not one per task of its graph (" +
                std::to_string(graph.tasks.size()) + ")");
  }
  // Per processor: its tasks, in the order they started in the run.
  const std::int32_t processors = graph.processor_count();
  std::vector<std::vector<std::int32_t>> started(static_cast<std::size_t>(processors));
  for (const Task& t : graph.tasks) {
    if (t.placement != Placement::processor || t.resource < 0 || t.resource >= processors) continue;
    started[static_cast<std::size_t>(t.resource)].push_back(t.id);
  }
  const auto timing = [&](std::int32_t id) -> const TaskTiming& { return run.tasks[static_cast<std::size_t>(id)]; };
  std::vector<std::string> groups(graph.tasks.size());
  for (auto& ids : started) {
    std::stable_sort(ids.begin(), ids.end(),
                     [&](std::int32_t a, std::int32_t b) { return timing(a).start_cycles < timing(b).start_cycles; });
    for (std::size_t i = 1; i < ids.size(); ++i) {
      const double wait_s = static_cast<double>(timing(ids[i]).start_cycles - timing(ids[i - 1]).end_cycles) / graph.clock_hz;
      groups[static_cast<std::size_t>(ids[i])] = wait_group_label(wait_s);
    }
  }
  return groups;
}

}  // namespace pipetwin::exec
