// Which backwards assemble the gradient at their output, and its price (gradient_assembly.hpp).
#include "pipetwin/schedule/gradient_assembly.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "pipetwin/models/cost_model.hpp"

namespace pipetwin {

GradientAssemblies gradient_assemblies(const TaskGraph& graph, std::int32_t layer_count) {
  const std::size_t n = graph.tasks.size();
  std::map<std::int32_t, std::int32_t> slice_readers;  // per producer: the tasks reading its activation gradient
  std::vector<bool> sends_output_gradients(n, false);  // a BA whose gradients go on to a BW
  for (const auto& t : graph.tasks) {
    for (const auto& d : t.deps) {
      if (d.carries == Carries::activation_gradient) ++slice_readers[d.task];
      if (d.carries == Carries::output_gradients) sends_output_gradients[static_cast<std::size_t>(d.task)] = true;
    }
  }
  GradientAssemblies a;
  a.group.assign(n, -1);
  a.assembles.assign(n, false);
  std::map<std::pair<std::int32_t, std::vector<std::int32_t>>, std::vector<std::int32_t>> readers;  // (processor, slices)
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor || !is_backward(t.kind) || t.last_layer + 1 == layer_count) continue;
    if (sends_output_gradients[static_cast<std::size_t>(t.id)]) continue;  // its gradients go on to a BW
    std::vector<std::int32_t> slices;
    bool kept = false;  // a BA kept the gradients for this BW
    for (const auto& d : t.deps) {
      if (d.carries == Carries::activation_gradient) slices.push_back(d.task);
      kept = kept || d.carries == Carries::output_gradients;
    }
    if (kept || slices.empty()) continue;
    std::sort(slices.begin(), slices.end());
    // Several slices, or one part of a split (a transfer carries its source's parts).
    a.assembles[static_cast<std::size_t>(t.id)] = slices.size() > 1 || graph.tasks[static_cast<std::size_t>(slices.front())].parts > 1;
    readers[{t.resource, slices}].push_back(t.id);
  }
  for (const auto& entry : readers) {
    // Named, not structured bindings: a C++17 lambda cannot capture those (clang refuses).
    const std::int32_t processor = entry.first.first;
    const std::vector<std::int32_t>& sources = entry.first.second;
    const std::vector<std::int32_t>& tasks = entry.second;
    if (tasks.size() < 2) continue;  // one reader: taken over, or its own copy
    const bool shared = std::all_of(sources.begin(), sources.end(), [&](std::int32_t source) {
      const Task& s = graph.tasks[static_cast<std::size_t>(source)];
      const auto count = slice_readers.find(source);
      return s.placement == Placement::processor && s.resource == processor && count != slice_readers.end() &&
             count->second == static_cast<std::int32_t>(tasks.size());
    });
    if (!shared) continue;
    const auto group = static_cast<std::int32_t>(a.group_tasks.size());
    a.group_tasks.push_back(static_cast<std::int32_t>(tasks.size()));
    const std::int32_t first = *std::min_element(tasks.begin(), tasks.end(), [&](std::int32_t x, std::int32_t y) {
      return graph.tasks[static_cast<std::size_t>(x)].order < graph.tasks[static_cast<std::size_t>(y)].order;
    });
    for (const auto id : tasks) {
      a.group[static_cast<std::size_t>(id)] = group;
      if (id != first) a.assembles[static_cast<std::size_t>(id)] = false;  // it reads the first one's
    }
  }
  return a;
}

void charge_gradient_assemblies(TaskGraph& graph, const HardwareProfile& hardware, const Network& network) {
  if (!hardware.calibration || hardware.cost_model == CostModelKind::unit) return;
  const GradientAssemblies a = gradient_assemblies(graph, static_cast<std::int32_t>(network.size()));
  for (auto& t : graph.tasks) {
    if (!a.assembles[static_cast<std::size_t>(t.id)]) continue;
    const Layer& layer = network.layers.at(static_cast<std::size_t>(t.last_layer));
    const std::int64_t cycles = gradient_assembly_cycles(hardware, layer, graph.samples_per_microbatch);
    if (cycles > 0) t.cost_cycles += cycles;
  }
}

}  // namespace pipetwin
