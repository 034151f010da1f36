// Tasks grouped by the wait before them on their processor (wait_groups.hpp).
#include "wait_groups.hpp"

#include <cstdint>
#include <vector>

#include "pipetwin/schedule/wait_loss.hpp"

namespace pipetwin::exec {

std::string wait_group_label(double wait_s) {
  if (wait_s < 0.5e-3) return "wait < 0.5 ms";
  if (wait_s < 5e-3) return "wait 0.5-5 ms";
  if (wait_s < 20e-3) return "wait 5-20 ms";
  return "wait >= 20 ms";
}

std::vector<std::string> wait_groups(const TaskGraph& graph, const Result& run) {
  const std::vector<std::int64_t> waits = waits_before_cycles(graph, run.tasks);
  std::vector<std::string> groups(graph.tasks.size());
  for (std::size_t i = 0; i < waits.size(); ++i) {
    if (waits[i] != kNoWait) groups[i] = wait_group_label(static_cast<double>(waits[i]) / graph.clock_hz);
  }
  return groups;
}

}  // namespace pipetwin::exec
