// Transfers' copies charged to the cores of the processors that send and receive them
// (copies_on_cores.hpp).
#include "pipetwin/schedule/copies_on_cores.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/rank_layout.hpp"

namespace pipetwin {
namespace {

// Cycles of `fixed_s` plus `bytes` at `bytes_per_s` (nothing for a rate not measured).
std::int64_t core_cycles(double fixed_s, std::int64_t bytes, double bytes_per_s, double clock_hz) {
  const double seconds = fixed_s + (bytes_per_s > 0 ? static_cast<double>(bytes) / bytes_per_s : 0.0);
  return static_cast<std::int64_t>(std::ceil(seconds * clock_hz));
}

}  // namespace

bool copies_take_cores(const TaskGraph& graph, const HardwareProfile& hardware) {
  const Calibration* calibration = hardware.calibration.get();
  return calibration != nullptr && calibration->device == "cpu" && calibration->cores > 0 &&
         graph.processor_count() >= calibration->cores;
}

void charge_copies_to_cores(TaskGraph& graph, const Calibration& calibration) {
  const double core_bytes_per_cycle = calibration.core_copy_bytes_per_s > 0 && graph.clock_hz > 0
                                          ? calibration.core_copy_bytes_per_s / graph.clock_hz
                                          : 0.0;
  const auto by_processor = tasks_by_processor(graph);
  // Per processor task: the one after it and the one before it on its processor, and its place there.
  std::vector<std::int32_t> next(graph.tasks.size(), -1), previous(graph.tasks.size(), -1);
  std::vector<std::size_t> place(graph.tasks.size(), 0);
  for (const auto& order : by_processor) {
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto t = static_cast<std::size_t>(order[i]);
      place[t] = i;
      if (i + 1 < order.size()) next[t] = order[i + 1];
      if (i > 0) previous[t] = order[i - 1];
    }
  }
  // Per transfer: its first reader on the processor it delivers to.
  std::vector<std::int32_t> first_reader(graph.tasks.size(), -1);
  for (const auto& c : graph.tasks) {
    if (c.placement != Placement::processor) continue;
    for (const auto& d : c.deps) {
      const Task& source = graph.tasks[static_cast<std::size_t>(d.task)];
      if (source.placement != Placement::link || graph.links[static_cast<std::size_t>(source.resource)].dst != c.resource) continue;
      std::int32_t& first = first_reader[static_cast<std::size_t>(d.task)];
      if (first < 0 || place[static_cast<std::size_t>(c.id)] < place[static_cast<std::size_t>(first)]) first = c.id;
    }
  }
  const std::int32_t processors = graph.processor_count();
  const auto crosses_ranks = [&](const LinkInfo& link) {
    return calibration.ranks > 1 && link.src != kHost && link.dst != kHost &&
           rank_of_processor(link.src, processors, calibration.ranks) != rank_of_processor(link.dst, processors, calibration.ranks);
  };
  std::vector<std::int64_t> charge(graph.tasks.size(), 0);
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::link || t.bytes <= 0) continue;
    const LinkInfo& link = graph.links[static_cast<std::size_t>(t.resource)];
    if (link.src == kHost || !(link.bytes_per_cycle > 0)) continue;
    const Dep* moved = data_dependency(t);  // its data comes from one task
    if (moved == nullptr) continue;
    // In one process, a copy; between ranks, packing and posting a message (measured).
    const bool message = crosses_ranks(link);
    const double bytes_per_cycle = core_bytes_per_cycle > 0 ? core_bytes_per_cycle : link.bytes_per_cycle;
    const std::int64_t send_cycles =
        message ? core_cycles(calibration.message_send_core_s, t.bytes, calibration.message_send_core_bytes_per_s, graph.clock_hz)
                : static_cast<std::int64_t>(std::ceil(static_cast<double>(t.bytes) / bytes_per_cycle));
    const Task& source = graph.tasks[static_cast<std::size_t>(moved->task)];
    const std::int32_t after = next[static_cast<std::size_t>(source.id)];
    if (source.placement == Placement::processor && source.resource == link.src && after >= 0) {
      // The copy and the sender's next task share one core, half each: the task loses the copy's
      // time, and the copy takes twice as long.
      charge[static_cast<std::size_t>(after)] += send_cycles;
      charge[static_cast<std::size_t>(t.id)] += send_cycles;
    }
    // Between ranks the receiver's listener takes the message from MPI and unpacks it while its
    // processor runs the task before the message's reader (or waits, which the charge then fills).
    const std::int32_t reader = first_reader[static_cast<std::size_t>(t.id)];
    if (message && reader >= 0 && previous[static_cast<std::size_t>(reader)] >= 0) {
      charge[static_cast<std::size_t>(previous[static_cast<std::size_t>(reader)])] +=
          core_cycles(calibration.message_receive_core_s, t.bytes, calibration.message_receive_core_bytes_per_s, graph.clock_hz);
    }
  }
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) graph.tasks[i].cost_cycles += charge[i];
}

}  // namespace pipetwin
