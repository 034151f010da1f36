// A backward's second way back to its layer's linear output, priced warm (warm_to_linear.hpp).
#include "pipetwin/schedule/warm_to_linear.hpp"

#include <algorithm>
#include <map>

#include "pipetwin/models/cost_model.hpp"

namespace pipetwin {
namespace {

bool one_layer_split_backward(const Task& t) {
  return (t.kind == TaskKind::BA || t.kind == TaskKind::BW) && t.first_layer >= 0 && t.first_layer == t.last_layer;
}

}  // namespace

std::vector<bool> repeats_to_linear(const TaskGraph& graph) {
  std::vector<bool> repeats(graph.tasks.size(), false);
  std::map<std::int32_t, std::vector<const Task*>> by_processor;  // in order
  for (const auto& t : graph.tasks) {
    if (t.placement == Placement::processor) by_processor[t.resource].push_back(&t);
  }
  for (auto& [processor, tasks] : by_processor) {
    std::sort(tasks.begin(), tasks.end(), [](const Task* a, const Task* b) { return a->order < b->order; });
    for (std::size_t i = 1; i < tasks.size(); ++i) {
      const Task& previous = *tasks[i - 1];
      const Task& t = *tasks[i];
      repeats[static_cast<std::size_t>(t.id)] = one_layer_split_backward(t) && one_layer_split_backward(previous) &&
                                                previous.first_layer == t.first_layer &&
                                                previous.minibatch == t.minibatch && previous.microbatch == t.microbatch;
    }
  }
  return repeats;
}

void charge_warm_to_linear(TaskGraph& graph, const HardwareProfile& hardware, const Network& network) {
  if (!hardware.calibration) return;
  const std::vector<bool> repeats = repeats_to_linear(graph);
  for (auto& t : graph.tasks) {
    if (!repeats[static_cast<std::size_t>(t.id)]) continue;
    const Layer& layer = network.layers.at(static_cast<std::size_t>(t.first_layer));
    const std::int64_t again = to_linear_again_cycles(hardware, layer, t.kind, graph.samples_per_microbatch);
    if (again < 0) continue;
    // What its price holds for the first time: a BA part's (LayerPipe's generator), or the
    // table's BW's.
    const std::int64_t first_time = t.kind == TaskKind::BA ? part_to_linear_cycles(hardware, layer, graph.samples_per_microbatch)
                                                           : to_linear_cycles(hardware, layer, graph.samples_per_microbatch);
    if (first_time <= 0) continue;  // a table without a fused B cannot tell the way back's first time
    t.cost_cycles = std::max<std::int64_t>(0, t.cost_cycles - first_time + again);
    t.memory_cycles = std::min(t.memory_cycles, t.cost_cycles);
  }
}

}  // namespace pipetwin
