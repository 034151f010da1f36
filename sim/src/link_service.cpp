// The fluid and packet-level services of a link medium.
#include "link_service.hpp"

#include <algorithm>
#include <cmath>

namespace pipetwin::sim {

void FluidService::admit(std::int32_t task, std::int64_t now, std::int64_t skipped_cycles) {
  ++admitted_;
  const std::int64_t latency = graph_.links[graph_.tasks[task].resource].latency_cycles;
  waiting_.push_back({now + std::max<std::int64_t>(0, latency - skipped_cycles), task});
}

void FluidService::advance(std::int64_t now, std::vector<std::int32_t>& finished) {
  bandwidth_.advance(now);
  // Admit to service the transfers whose latency has passed, in admission order.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->enters_cycles <= now) {
      const Task& t = graph_.tasks[it->task];
      bandwidth_.add(it->task, std::max<std::int64_t>(0, t.cost_cycles - graph_.links[t.resource].latency_cycles));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  bandwidth_.take_finished(finished);
  admitted_ -= static_cast<int>(finished.size());
}

std::int64_t FluidService::next_event(std::int64_t now) const {
  std::int64_t next = bandwidth_.next_completion(now);
  for (const auto& w : waiting_) {
    if (next < 0 || w.enters_cycles < next) next = w.enters_cycles;
  }
  return next;
}

PacketService::PacketService(const TaskGraph& graph, const PacketSettings& settings, PacketNetwork& network)
    : graph_(graph), settings_(settings), network_(network) {}

std::int32_t PacketService::credits_of(const LinkInfo& link, const PacketSettings& settings) {
  if (settings.credits > 0) return settings.credits;
  // A full packet's serialisation, and the round trip from sending one to its credit's return.
  const double packet = std::max(1.0, static_cast<double>(settings.packet_bytes) / link.bytes_per_cycle);
  const double round_trip = packet + 2.0 * static_cast<double>(link.latency_cycles);
  return static_cast<std::int32_t>(std::min(1e6, std::ceil(round_trip / packet))) + 1;
}

std::int64_t PacketService::packet_cycles(const Flow& flow, std::int64_t packet) const {
  if (flow.bytes <= 0) return flow.service_cycles;
  // Packet k ends at ceil(service x bytes through k / bytes) cycles of service, so the packets
  // add up to the service exactly.
  auto through = [&](std::int64_t k) {
    const double bytes = static_cast<double>(std::min(flow.bytes, k * settings_.packet_bytes));
    return static_cast<std::int64_t>(
        std::ceil(static_cast<double>(flow.service_cycles) * bytes / static_cast<double>(flow.bytes) - 1e-9));
  };
  return through(packet + 1) - through(packet);
}

PacketService::Flow* PacketService::flow_of(std::int32_t task) {
  for (auto& flow : flows_) {
    if (flow.task == task) return &flow;
  }
  return nullptr;
}

PacketService::Port& PacketService::port(std::vector<Port>& ports, std::int32_t id) {
  for (auto& p : ports) {
    if (p.id == id) return p;
  }
  ports.push_back(Port{});
  ports.back().id = id;
  return ports.back();
}

void PacketService::admit(std::int32_t task, std::int64_t, std::int64_t) {
  const Task& t = graph_.tasks[task];
  const LinkInfo& link = graph_.links[t.resource];
  Flow flow;
  flow.task = task;
  flow.link = t.resource;
  flow.input = link.switched ? link.src : 0;
  flow.output = link.switched ? link.dst : -1;
  flow.bytes = std::max<std::int64_t>(0, t.bytes);
  flow.service_cycles = std::max<std::int64_t>(0, t.cost_cycles - link.latency_cycles);
  flow.packets = flow.bytes > 0 ? (flow.bytes + settings_.packet_bytes - 1) / settings_.packet_bytes : 1;
  flows_.push_back(flow);
  port(inputs_, flow.input);
  if (link.switched) port(outputs_, flow.output);
}

void PacketService::delivered(const Packet& packet, std::int64_t sent) {
  const std::int64_t latency = graph_.links[packet.link].latency_cycles;
  events_.push({sent + latency, false, packet.task, packet.link});
  events_.push({sent + 2 * latency, true, packet.task, packet.link});
}

bool PacketService::start_input(Port& input, std::int64_t now) {
  if (input.busy || flows_.empty()) return false;
  for (std::size_t tried = 0; tried < flows_.size(); ++tried) {
    const std::size_t i = (input.next_flow + tried) % flows_.size();
    Flow& flow = flows_[i];
    if (flow.input != input.id || flow.sent == flow.packets || network_.credits[flow.link] == 0) continue;
    // A next hop forwards only what has arrived from the hop before.
    if (network_.released[flow.task] >= 0 && flow.sent >= network_.released[flow.task]) continue;
    --network_.credits[flow.link];
    const std::int64_t cycles = packet_cycles(flow, flow.sent);
    ++flow.sent;
    input.busy = true;
    input.until = now + cycles;
    input.packet = {flow.task, flow.link, cycles, input.until};
    input.next_flow = i + 1;  // the next packet goes to the next transfer, round robin
    // On a switch the packet joins its output queue as its head arrives (virtual cut-through).
    if (graph_.links[flow.link].switched) port(outputs_, flow.output).queue.push_back(input.packet);
    return true;
  }
  return false;
}

bool PacketService::start_output(Port& output, std::int64_t now) {
  if (output.busy || output.queue.empty()) return false;
  output.packet = output.queue.front();
  output.queue.erase(output.queue.begin());
  output.busy = true;
  // It cannot leave before it has fully arrived at the switch.
  output.until = std::max(now + output.packet.cycles, output.packet.input_ends);
  return true;
}

void PacketService::advance(std::int64_t now, std::vector<std::int32_t>& finished) {
  finished.clear();
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto& input : inputs_) {  // a packet has left its sender
      if (!input.busy || input.until > now) continue;
      input.busy = false;
      if (!graph_.links[input.packet.link].switched) delivered(input.packet, input.until);
      changed = true;
    }
    for (auto& output : outputs_) {  // a packet has left the switch
      if (!output.busy || output.until > now) continue;
      output.busy = false;
      delivered(output.packet, output.until);
      changed = true;
    }
    while (!events_.empty() && events_.top().cycles <= now) {
      const Event event = events_.top();
      events_.pop();
      changed = true;
      if (event.credit) {
        ++network_.credits[event.link];
        continue;
      }
      Flow* flow = flow_of(event.task);
      ++flow->arrived;
      if (network_.follower[flow->task] >= 0) {
        const std::int32_t next_hop = network_.follower[flow->task];
        network_.released[next_hop] = flow->arrived;
        forwarded_.push_back(next_hop);
      }
      if (flow->arrived == flow->packets) {
        finished.push_back(flow->task);
        const auto index = static_cast<std::size_t>(flow - flows_.data());
        flows_.erase(flows_.begin() + static_cast<std::ptrdiff_t>(index));
        for (auto& input : inputs_) {
          if (input.next_flow > index) --input.next_flow;
        }
      }
    }
    for (auto& input : inputs_) changed = start_input(input, now) || changed;
    for (auto& output : outputs_) changed = start_output(output, now) || changed;
  }
}

std::int64_t PacketService::next_event(std::int64_t) const {
  std::int64_t next = events_.empty() ? -1 : events_.top().cycles;
  for (const auto* ports : {&inputs_, &outputs_}) {
    for (const auto& p : *ports) {
      if (p.busy && (next < 0 || p.until < next)) next = p.until;
    }
  }
  return next;
}

}  // namespace pipetwin::sim
