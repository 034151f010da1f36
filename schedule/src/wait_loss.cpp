// What a wait costs the task after it: the bytes a task touches and the charge (wait_loss.hpp).
#include "pipetwin/schedule/wait_loss.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

std::int64_t layer_wait_exposed_bytes(const Task& task, const Network& network, std::int32_t layer, std::int64_t samples) {
  if (task.placement != Placement::processor || task.first_layer < 0 || layer < task.first_layer || layer > task.last_layer) {
    return 0;
  }
  if (layer >= static_cast<std::int32_t>(network.size())) {
    throw Error("wait loss: " + task_label(task) + " runs layer " + std::to_string(layer) + ", network " + network.name +
                " has " + std::to_string(network.size()));
  }
  const Layer& l = network.layers[static_cast<std::size_t>(layer)];
  const std::int64_t n = std::max<std::int64_t>(0, samples);
  switch (task.kind) {
    case TaskKind::F:
    case TaskKind::RC:
      return l.param_bytes + l.output_bytes * n + (layer == task.first_layer ? l.input_bytes * n : 0);
    case TaskKind::B:
    case TaskKind::BA:
      return l.param_bytes + (l.stash_bytes + l.input_bytes) * n + l.stash_fixed_bytes +
             (layer == task.last_layer ? l.output_bytes * n : 0);
    case TaskKind::BW:
      return l.param_bytes + l.stash_bytes * n + l.stash_fixed_bytes + (layer == task.last_layer ? l.output_bytes * n : 0);
    case TaskKind::U:
      return 2 * l.param_bytes;
    default:
      return 0;
  }
}

std::int64_t task_wait_exposed_bytes(const TaskGraph& graph, const Task& task, const Network& network) {
  if (task.placement != Placement::processor || task.first_layer < 0) return 0;
  const SampleRange part = part_samples(task, graph.samples_per_microbatch);  // all of them but in a BA part
  const std::int64_t samples = part.end - part.begin;
  std::int64_t bytes = 0;
  for (std::int32_t l = task.first_layer; l <= task.last_layer; ++l) bytes += layer_wait_exposed_bytes(task, network, l, samples);
  return bytes;
}

std::int64_t wait_loss_cycles(const TaskGraph& graph, const Task& task, std::int64_t wait_cycles) {
  const auto& curve = graph.wait_loss;
  if (curve.empty() || task.wait_exposed_bytes <= 0 || wait_cycles <= 0) return 0;
  double per_byte = curve.back().extra_cycles_per_byte;
  double w0 = 0, c0 = 0;  // from nothing at no wait
  for (const auto& point : curve) {
    const auto w1 = static_cast<double>(point.wait_cycles);
    if (static_cast<double>(wait_cycles) <= w1) {
      per_byte = w1 > w0 ? c0 + (point.extra_cycles_per_byte - c0) * (static_cast<double>(wait_cycles) - w0) / (w1 - w0)
                         : point.extra_cycles_per_byte;
      break;
    }
    w0 = w1;
    c0 = point.extra_cycles_per_byte;
  }
  return std::max<std::int64_t>(0, std::llround(per_byte * static_cast<double>(task.wait_exposed_bytes)));
}

std::vector<std::int64_t> waits_before_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times) {
  if (times.size() != graph.tasks.size()) {
    throw Error("internal: " + std::to_string(times.size()) + " timings are not one per task of the graph (" +
                std::to_string(graph.tasks.size()) + ")");
  }
  // Per processor: its tasks, in the order they started.
  const std::int32_t processors = graph.processor_count();
  std::vector<std::vector<std::int32_t>> started(static_cast<std::size_t>(processors));
  for (const Task& t : graph.tasks) {
    if (t.placement != Placement::processor || t.resource < 0 || t.resource >= processors) continue;
    started[static_cast<std::size_t>(t.resource)].push_back(t.id);
  }
  const auto timing = [&](std::int32_t id) -> const TaskTiming& { return times[static_cast<std::size_t>(id)]; };
  std::vector<std::int64_t> waits(graph.tasks.size(), kNoWait);
  for (auto& ids : started) {
    std::stable_sort(ids.begin(), ids.end(),
                     [&](std::int32_t a, std::int32_t b) { return timing(a).start_cycles < timing(b).start_cycles; });
    for (std::size_t i = 1; i < ids.size(); ++i) {
      waits[static_cast<std::size_t>(ids[i])] = timing(ids[i]).start_cycles - timing(ids[i - 1]).end_cycles;
    }
  }
  return waits;
}

std::vector<std::int64_t> wait_charges_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times) {
  std::vector<std::int64_t> charges(graph.tasks.size(), 0);
  if (graph.wait_loss.empty()) return charges;
  const std::vector<std::int64_t> waits = waits_before_cycles(graph, times);
  for (const Task& t : graph.tasks) {
    const std::int64_t wait = waits[static_cast<std::size_t>(t.id)];
    if (wait != kNoWait) charges[static_cast<std::size_t>(t.id)] = wait_loss_cycles(graph, t, wait);
  }
  return charges;
}

void price_waits(TaskGraph& graph, const HardwareProfile& hardware, const Network& network) {
  if (!hardware.calibration || hardware.calibration->wait_curve.extra_s_per_byte.empty()) return;
  graph.wait_loss.clear();
  for (const auto& [wait_s, s_per_byte] : hardware.calibration->wait_curve.extra_s_per_byte) {
    graph.wait_loss.push_back({std::llround(wait_s * graph.clock_hz), s_per_byte * graph.clock_hz});
  }
  // At most the curve's footprint of each (Calibration::wait_charged_bytes).
  for (Task& t : graph.tasks) {
    t.wait_exposed_bytes = hardware.calibration->wait_charged_bytes(task_wait_exposed_bytes(graph, t, network));
  }
}

}  // namespace pipetwin
