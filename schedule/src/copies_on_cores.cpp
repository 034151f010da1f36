// Transfers' copies charged to the sending processor's next task (copies_on_cores.hpp).
#include "pipetwin/schedule/copies_on_cores.hpp"

#include <cmath>
#include <vector>

#include "pipetwin/models/calibration.hpp"

namespace pipetwin {

bool copies_take_cores(const TaskGraph& graph, const HardwareProfile& hardware) {
  const Calibration* calibration = hardware.calibration.get();
  return calibration != nullptr && calibration->device == "cpu" && calibration->cores > 0 &&
         graph.processor_count() >= calibration->cores;
}

void charge_copies_to_cores(TaskGraph& graph) {
  const auto by_processor = tasks_by_processor(graph);
  std::vector<std::int32_t> next(graph.tasks.size(), -1);  // per processor task: the one after it
  for (const auto& order : by_processor) {
    for (std::size_t i = 0; i + 1 < order.size(); ++i) next[static_cast<std::size_t>(order[i])] = order[i + 1];
  }
  std::vector<std::int64_t> charge(graph.tasks.size(), 0);
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::link || t.bytes <= 0) continue;
    const LinkInfo& link = graph.links[static_cast<std::size_t>(t.resource)];
    if (link.src == kHost || !(link.bytes_per_cycle > 0)) continue;
    const Dep* moved = data_dependency(t);  // its data comes from one task
    if (moved == nullptr) continue;
    const Task& source = graph.tasks[static_cast<std::size_t>(moved->task)];
    const std::int32_t after = next[static_cast<std::size_t>(source.id)];
    if (source.placement == Placement::processor && source.resource == link.src && after >= 0) {
      // The copy and the sender's next task share one core, half each: the task loses the copy's
      // time, and the copy takes twice as long.
      const auto copy_cycles = static_cast<std::int64_t>(std::ceil(static_cast<double>(t.bytes) / link.bytes_per_cycle));
      charge[static_cast<std::size_t>(after)] += copy_cycles;
      charge[static_cast<std::size_t>(t.id)] += copy_cycles;
    }
  }
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) graph.tasks[i].cost_cycles += charge[i];
}

}  // namespace pipetwin
