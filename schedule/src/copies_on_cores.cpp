// Transfers' copies charged to the cores of the processors that send and receive them
// (copies_on_cores.hpp).
#include "pipetwin/schedule/copies_on_cores.hpp"

#include <algorithm>
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

// A transfer its sender's thread copies has read the sender's buffers when the task charged with
// its copy ends (the executor frees them as the copy ends, before that thread's next task), not
// when the reader's wake-up that the transfer then stands for ends: each buffer on the sender that
// such a transfer was freed after is freed after that task instead.
void free_copied_sources_with_their_copy(TaskGraph& graph, const std::vector<std::int32_t>& copied_by) {
  for (auto& b : graph.buffers) {
    for (auto& reader : b.freed_after) {
      const std::int32_t task = copied_by[static_cast<std::size_t>(reader)];
      if (task >= 0 && graph.tasks[static_cast<std::size_t>(task)].resource == b.where) reader = task;
    }
  }
}

}  // namespace

std::vector<std::int32_t> copied_after(const TaskGraph& graph) {
  std::vector<std::size_t> place(graph.tasks.size(), 0);  // a processor task's place in its order
  for (const auto& order : tasks_by_processor(graph)) {
    for (std::size_t i = 0; i < order.size(); ++i) place[static_cast<std::size_t>(order[i])] = i;
  }
  std::vector<std::int32_t> after(graph.tasks.size(), -1);
  for (const auto& transfers : tasks_by_link(graph)) {
    if (transfers.empty()) continue;
    const LinkInfo& link = graph.links[static_cast<std::size_t>(graph.tasks[static_cast<std::size_t>(transfers.front())].resource)];
    if (link.policy != LinkPolicy::in_order || link.src == kHost) continue;
    std::vector<std::int32_t> last_read;  // per transfer of the link, in its order
    for (const auto id : transfers) {
      const Task& t = graph.tasks[static_cast<std::size_t>(id)];
      std::int32_t last = -1;
      for (const auto& d : t.deps) {
        const Task& source = graph.tasks[static_cast<std::size_t>(d.task)];
        if (source.placement != Placement::processor || source.resource != link.src) {
          last = -1;
          break;
        }
        if (last < 0 || place[static_cast<std::size_t>(d.task)] > place[static_cast<std::size_t>(last)]) last = d.task;
      }
      // A transfer that reads another resource's task, or none, or would run before the link's
      // previous one: the link keeps its thread.
      if (last < 0 || (!last_read.empty() && place[static_cast<std::size_t>(last)] < place[static_cast<std::size_t>(last_read.back())])) {
        last_read.clear();
        break;
      }
      last_read.push_back(last);
    }
    if (last_read.size() != transfers.size()) continue;
    for (std::size_t i = 0; i < transfers.size(); ++i) after[static_cast<std::size_t>(transfers[i])] = last_read[i];
  }
  return after;
}

namespace {

// Per link: whether some transfer on it is copied after a sender's task (`after`: copied_after's).
std::vector<bool> links_with_copies(const TaskGraph& graph, const std::vector<std::int32_t>& after) {
  std::vector<bool> copied(graph.links.size(), false);
  for (const auto& t : graph.tasks) {
    if (after[static_cast<std::size_t>(t.id)] >= 0) copied[static_cast<std::size_t>(t.resource)] = true;
  }
  return copied;
}

}  // namespace

std::vector<bool> links_copied_by_senders(const TaskGraph& graph) { return links_with_copies(graph, copied_after(graph)); }

bool copies_take_cores(const TaskGraph& graph, const HardwareProfile& hardware) {
  return copies_take_cores(graph.processor_count(), hardware);
}

bool copies_take_cores(std::int32_t processors, const HardwareProfile& hardware) {
  const Calibration* calibration = hardware.calibration.get();
  return calibration != nullptr && calibration->device == "cpu" && calibration->cores > 0 &&
         processors >= calibration->cores;
}

std::int64_t sender_copy_cycles(const Calibration& calibration, std::int64_t bytes, double clock_hz,
                                double bytes_per_cycle) {
  const double copy_s = calibration.sender_copy_s(bytes);
  if (copy_s >= 0) return static_cast<std::int64_t>(std::ceil((copy_s + calibration.charged_task_gap_s()) * clock_hz - 1e-9));
  return bytes_per_cycle > 0 ? static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) / bytes_per_cycle)) : 0;
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
  // In one process the executor has senders copy where it can (copied_after); across ranks every
  // link keeps its threads.
  const std::vector<std::int32_t> after_read =
      calibration.ranks > 1 ? std::vector<std::int32_t>(graph.tasks.size(), -1) : copied_after(graph);
  const double handoff_s = calibration.one_handoff_s();  // < 0: not measured, the links keep their latency
  if (handoff_s >= 0) {
    // One wake-up (the sender's of the reader), not two (of the link's thread, then of the reader).
    const auto handoff_cycles = static_cast<std::int64_t>(std::ceil(handoff_s * graph.clock_hz - 1e-9));
    const std::vector<bool> copied = links_with_copies(graph, after_read);  // per link: its sender copies
    for (auto& t : graph.tasks) {
      if (t.placement != Placement::link || !copied[static_cast<std::size_t>(t.resource)] || t.cost_cycles <= 0) continue;
      t.cost_cycles = std::max<std::int64_t>(0, t.cost_cycles - graph.links[static_cast<std::size_t>(t.resource)].latency_cycles) + handoff_cycles;
    }
    for (std::size_t k = 0; k < graph.links.size(); ++k) {
      if (!copied[k]) continue;
      // No link thread: the reader's wake-up alone, which does not hold the link.
      graph.links[k].latency_cycles = handoff_cycles;
      graph.links[k].wake_cycles = 0;
      graph.links[k].delivery_cycles = handoff_cycles;
    }
  }
  const std::int32_t processors = graph.processor_count();
  const auto crosses_ranks = [&](const LinkInfo& link) {
    return calibration.ranks > 1 && link.src != kHost && link.dst != kHost &&
           rank_of_processor(link.src, processors, calibration.ranks) != rank_of_processor(link.dst, processors, calibration.ranks);
  };
  std::vector<std::int64_t> charge(graph.tasks.size(), 0);
  std::vector<std::int32_t> copied_by(graph.tasks.size(), -1);  // per transfer: the sender's task charged its copy
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
    if (const std::int32_t last = after_read[static_cast<std::size_t>(t.id)]; last >= 0) {
      // The sender's thread copies it right after the last of its tasks it reads, at full speed
      // (as the table timed a copy of its size), before it goes on: the copy is that task's
      // time, so that the sender's next task starts after it however long that task then waits
      // for its other inputs, and the transfer is the reader's wake-up alone. Where the table was
      // timed in a pipeline, a copy costs what the senders' copies there took
      // (Calibration::sender_copy_s), and the thread's gap to its next task follows it.
      const std::int64_t copy_cycles = sender_copy_cycles(calibration, t.bytes, graph.clock_hz, bytes_per_cycle);
      charge[static_cast<std::size_t>(t.id)] -= t.cost_cycles - link.latency_cycles;
      charge[static_cast<std::size_t>(last)] += copy_cycles;
      copied_by[static_cast<std::size_t>(t.id)] = last;
    } else if (source.placement == Placement::processor && source.resource == link.src && after >= 0) {
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
  free_copied_sources_with_their_copy(graph, copied_by);
}

}  // namespace pipetwin
