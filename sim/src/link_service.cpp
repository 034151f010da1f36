// The fluid and packet-level services of a link medium.
#include "link_service.hpp"

#include <algorithm>
#include <cmath>

namespace pipetwin::sim {

void FluidService::admit(std::int32_t task, std::int64_t now) {
  ++admitted_;
  waiting_.push_back({now + graph_.links[graph_.tasks[task].resource].latency_cycles, task});
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

PacketService::PacketService(const TaskGraph& graph, const PacketSettings& settings, CutThrough* cut_through)
    : graph_(graph), settings_(settings), cut_through_(cut_through), credits_(graph.links.size(), 0) {
  for (std::size_t k = 0; k < graph.links.size(); ++k) credits_[k] = credits_of(graph.links[k], settings);
}

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

void PacketService::admit(std::int32_t task, std::int64_t) {
  const Task& t = graph_.tasks[task];
  Flow flow;
  flow.task = task;
  flow.link = t.resource;
  flow.bytes = std::max<std::int64_t>(0, t.bytes);
  flow.service_cycles = std::max<std::int64_t>(0, t.cost_cycles - graph_.links[t.resource].latency_cycles);
  flow.packets = flow.bytes > 0 ? (flow.bytes + settings_.packet_bytes - 1) / settings_.packet_bytes : 1;
  flows_.push_back(flow);
}

bool PacketService::start_next_packet(std::int64_t now) {
  if (sending_ >= 0 || flows_.empty()) return false;
  for (std::size_t tried = 0; tried < flows_.size(); ++tried) {
    const std::size_t i = (next_flow_ + tried) % flows_.size();
    Flow& flow = flows_[i];
    if (flow.sent == flow.packets || credits_[flow.link] == 0) continue;
    // A next hop forwards only what has arrived from the hop before.
    if (cut_through_ != nullptr && cut_through_->released[flow.task] >= 0 &&
        flow.sent >= cut_through_->released[flow.task]) {
      continue;
    }
    --credits_[flow.link];
    sending_ = flow.task;
    sending_until_ = now + packet_cycles(flow, flow.sent);
    ++flow.sent;
    next_flow_ = i + 1;  // the next packet goes to the next transfer, round robin
    return true;
  }
  return false;
}

void PacketService::advance(std::int64_t now, std::vector<std::int32_t>& finished) {
  finished.clear();
  bool changed = true;
  while (changed) {
    changed = false;
    if (sending_ >= 0 && sending_until_ <= now) {  // a packet leaves the medium
      const std::int64_t latency = graph_.links[flow_of(sending_)->link].latency_cycles;
      events_.push({sending_until_ + latency, false, sending_, flow_of(sending_)->link});
      events_.push({sending_until_ + 2 * latency, true, sending_, flow_of(sending_)->link});
      sending_ = -1;
      changed = true;
    }
    while (!events_.empty() && events_.top().cycles <= now) {
      const Event event = events_.top();
      events_.pop();
      changed = true;
      if (event.credit) {
        ++credits_[event.link];
        continue;
      }
      Flow* flow = flow_of(event.task);
      ++flow->arrived;
      if (cut_through_ != nullptr && cut_through_->follower[flow->task] >= 0) {
        const std::int32_t next_hop = cut_through_->follower[flow->task];
        cut_through_->released[next_hop] = flow->arrived;
        forwarded_.push_back(next_hop);
      }
      if (flow->arrived == flow->packets) {
        finished.push_back(flow->task);
        const auto index = static_cast<std::size_t>(flow - flows_.data());
        flows_.erase(flows_.begin() + static_cast<std::ptrdiff_t>(index));
        if (next_flow_ > index) --next_flow_;
      }
    }
    if (start_next_packet(now)) changed = true;
  }
}

std::int64_t PacketService::next_event(std::int64_t) const {
  std::int64_t next = sending_ >= 0 ? sending_until_ : -1;
  if (!events_.empty() && (next < 0 || events_.top().cycles < next)) next = events_.top().cycles;
  return next;
}

}  // namespace pipetwin::sim
