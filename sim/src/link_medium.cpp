// The link medium module's process.
#include "link_medium.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin::sim {

LinkMediumModule::LinkMediumModule(const sc_core::sc_module_name& name, const std::vector<std::int32_t>& queue_position,
                                   const std::vector<std::int32_t>& in_order_slot, std::unique_ptr<LinkService> service)
    : sc_core::sc_module(name),
      board("board"),
      ready_in("ready_in"),
      in_service("in_service", 0),
      queue_position_(queue_position),
      in_order_slot_(in_order_slot),
      service_(std::move(service)),
      packets_(dynamic_cast<PacketService*>(service_.get())),
      wake_("wake") {
  ready_in.bind(*this);
  SC_METHOD(step);
}

std::int32_t LinkMediumModule::serve_in_order(std::vector<std::int32_t> queue) {
  InOrderLink state;
  state.arrived.assign(queue.size(), 0);
  state.queue = std::move(queue);
  in_order_.push_back(std::move(state));
  return static_cast<std::int32_t>(in_order_.size()) - 1;
}

const LinkInfo& LinkMediumModule::link_of(std::int32_t task) const {
  const TaskGraph& graph = board->graph();
  return graph.links[static_cast<std::size_t>(graph.tasks[static_cast<std::size_t>(task)].resource)];
}

void LinkMediumModule::admit(std::int32_t task, std::int64_t skipped_cycles) {
  board->start(task);
  service_->admit(task, board->now_cycles(), skipped_cycles);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void LinkMediumModule::admit_next(InOrderLink& link) {
  if (link.busy || link.next >= link.queue.size() || !link.arrived[link.next]) return;
  link.busy = true;
  const std::int32_t task = link.queue[link.next];
  // Fluid service: the reader's wake-up comes after the link is free, and a transfer that was
  // ready when the one before freed the link finds its thread awake (LinkInfo).
  std::int64_t skipped = 0;
  if (packets_ == nullptr) {
    const LinkInfo& info = link_of(task);
    const bool queued = link.next > 0 && board->now_cycles() <= link.freed_cycles;
    skipped = info.delivery_cycles + (queued ? info.wake_cycles : 0);
  }
  ++link.next;
  admit(task, skipped);
}

void LinkMediumModule::task_ready(std::int32_t task) {
  const std::int32_t slot = in_order_slot_[task];
  if (slot < 0) {
    admit(task, 0);
    return;
  }
  InOrderLink& link = in_order_[slot];
  link.arrived[queue_position_[task]] = 1;
  admit_next(link);
}

void LinkMediumModule::packet_forwarded(std::int32_t task, PacketNetwork& network) {
  if (!network.admitted[task]) {
    network.admitted[task] = 1;
    task_ready(task);
  }
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void LinkMediumModule::step() {
  for (const auto task : initial_) task_ready(task);
  initial_.clear();
  const std::int64_t now = board->now_cycles();
  bool changed = true;
  while (changed) {  // a finish may admit the next transfer of an in-order link at once
    service_->advance(now, finished_);
    changed = !finished_.empty();
    if (packets_ != nullptr && !packets_->forwarded().empty()) {
      // Taken first: telling a medium (this one too) may forward more.
      std::vector<std::int32_t> forwarded;
      forwarded.swap(packets_->forwarded());
      for (const auto next_hop : forwarded) {
        PacketNetwork& network = packets_->network();
        network.medium[next_hop]->packet_forwarded(next_hop, network);
      }
      changed = true;
    }
    for (const auto task : finished_) {
      const std::int32_t slot = in_order_slot_[task];
      const std::int64_t delivery = slot >= 0 && packets_ == nullptr ? link_of(task).delivery_cycles : 0;
      if (delivery > 0) {
        delivering_.push_back({now + delivery, task});
      } else {
        board->finish(task);
      }
      if (slot >= 0) {
        in_order_[slot].busy = false;
        in_order_[slot].freed_cycles = now;
        admit_next(in_order_[slot]);
      }
    }
    for (auto it = delivering_.begin(); it != delivering_.end();) {
      if (it->first <= now) {
        board->finish(it->second);
        it = delivering_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (traced_) in_service.write(service_->in_service());
  std::int64_t next = service_->next_event(now);
  for (const auto& [at, task] : delivering_) {
    if (next < 0 || at < next) next = at;
  }
  if (next > board->horizon_cycles()) {
    board->fail(std::make_exception_ptr(Error(
        "cannot simulate: a transfer on " + std::string(name()) + " would end after cycle " +
        std::to_string(board->horizon_cycles()) + ", the last this run's clock reaches")));
    return;
  }
  if (next < 0) {
    sc_core::next_trigger(wake_);
  } else {
    sc_core::next_trigger(board->cycles(next - now), wake_);
  }
}

}  // namespace pipetwin::sim
