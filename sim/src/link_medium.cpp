// The link medium module's process.
#include "link_medium.hpp"

#include <algorithm>

namespace pipetwin::sim {

LinkMediumModule::LinkMediumModule(const sc_core::sc_module_name& name, const std::vector<std::int32_t>& queue_position,
                                   const std::vector<std::int32_t>& in_order_slot)
    : sc_core::sc_module(name),
      board("board"),
      ready_in("ready_in"),
      in_service("in_service", 0),
      queue_position_(queue_position),
      in_order_slot_(in_order_slot),
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

void LinkMediumModule::admit(std::int32_t task) {
  const TaskGraph& g = board->graph();
  board->start(task);
  ++admitted_;
  waiting_.push_back({board->now_cycles() + g.links[g.tasks[task].resource].latency_cycles, task});
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void LinkMediumModule::admit_next(InOrderLink& link) {
  if (link.busy || link.next >= link.queue.size() || !link.arrived[link.next]) return;
  link.busy = true;
  admit(link.queue[link.next++]);
}

void LinkMediumModule::task_ready(std::int32_t task) {
  const std::int32_t slot = in_order_slot_[task];
  if (slot < 0) {
    admit(task);
    return;
  }
  InOrderLink& link = in_order_[slot];
  link.arrived[queue_position_[task]] = 1;
  admit_next(link);
}

void LinkMediumModule::step() {
  for (const auto task : initial_) task_ready(task);
  initial_.clear();
  const TaskGraph& g = board->graph();
  const std::int64_t now = board->now_cycles();
  bandwidth_.advance(now);
  bool changed = true;
  while (changed) {  // a finish may admit the next transfer of an in-order link at once
    changed = false;
    // Admit to service the transfers whose latency has passed, in admission order.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->enters_cycles <= now) {
        const Task& t = g.tasks[it->task];
        bandwidth_.add(it->task, std::max<std::int64_t>(0, t.cost_cycles - g.links[t.resource].latency_cycles));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    bandwidth_.take_finished(finished_);
    for (const auto task : finished_) {
      changed = true;
      --admitted_;
      board->finish(task);
      const std::int32_t slot = in_order_slot_[task];
      if (slot >= 0) {
        in_order_[slot].busy = false;
        admit_next(in_order_[slot]);
      }
    }
  }
  if (traced_) in_service.write(admitted_);
  std::int64_t next = bandwidth_.next_completion(now);
  for (const auto& w : waiting_) {
    if (next < 0 || w.enters_cycles < next) next = w.enters_cycles;
  }
  if (next < 0) {
    sc_core::next_trigger(wake_);
  } else {
    sc_core::next_trigger(board->cycles(next - now), wake_);
  }
}

}  // namespace pipetwin::sim
