// A link medium as a SystemC method process: it wakes at arrivals, at the end of latencies and
// at the earliest completion.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "link_medium.hpp"

#include <algorithm>

namespace pipetwin::sim {

LinkMedium::LinkMedium(RunState& run, WorkerLease& lease) : run_(run), worker_(lease.borrow(*this)) {}

void LinkMedium::serve_in_order(std::int32_t link, std::vector<std::int32_t> queue) {
  InOrderLink& state = in_order_[link];
  for (std::size_t i = 0; i < queue.size(); ++i) position_[queue[i]] = i;
  state.arrived.assign(queue.size(), 0);
  state.queue = std::move(queue);
}

void LinkMedium::admit(std::int32_t task) {
  const Task& t = run_.graph().tasks[task];
  run_.start(task);
  waiting_.push_back({run_.now_cycles() + run_.graph().links[t.resource].latency_cycles, task});
  worker_.wake().notify(sc_core::SC_ZERO_TIME);
}

void LinkMedium::admit_next(InOrderLink& link) {
  if (link.busy || link.next >= link.queue.size() || !link.arrived[link.next]) return;
  link.busy = true;
  admit(link.queue[link.next++]);
}

void LinkMedium::arrive(std::int32_t task) {
  const auto link = in_order_.find(run_.graph().tasks[task].resource);
  if (link == in_order_.end()) {
    admit(task);
    return;
  }
  link->second.arrived[position_.at(task)] = 1;
  admit_next(link->second);
}

void LinkMedium::step() {
  const std::int64_t now = run_.now_cycles();
  bandwidth_.advance(now);
  bool changed = true;
  while (changed) {  // a finish may admit the next transfer of an in-order link at once
    changed = false;
    // Admit to service the transfers whose latency has passed, in admission order.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->enters_cycles <= now) {
        const Task& t = run_.graph().tasks[it->task];
        bandwidth_.add(it->task, std::max<std::int64_t>(
                                     0, t.cost_cycles - run_.graph().links[t.resource].latency_cycles));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto task : bandwidth_.take_finished()) {
      changed = true;
      run_.finish(task);
      const auto link = in_order_.find(run_.graph().tasks[task].resource);
      if (link != in_order_.end()) {
        link->second.busy = false;
        admit_next(link->second);
      }
    }
  }
  std::int64_t next = bandwidth_.next_completion(now);
  for (const auto& w : waiting_) {
    if (next < 0 || w.enters_cycles < next) next = w.enters_cycles;
  }
  worker_.wake_within(next < 0 ? -1 : next - now);
}

}  // namespace pipetwin::sim
