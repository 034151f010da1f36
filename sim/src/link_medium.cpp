// A link medium as a SystemC method process: it wakes at arrivals, at the end of latencies and
// at the earliest completion.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "link_medium.hpp"

#include <algorithm>

namespace pipetwin::sim {

LinkMedium::LinkMedium(RunState& run, WorkerLease& lease) : run_(run), worker_(lease.borrow(*this)) {}

void LinkMedium::arrive(std::int32_t task) {
  const Task& t = run_.graph().tasks[task];
  run_.start(task);
  waiting_.push_back({run_.now_cycles() + run_.graph().links[t.resource].latency_cycles, task});
  worker_.wake().notify(sc_core::SC_ZERO_TIME);
}

void LinkMedium::step() {
  const std::int64_t now = run_.now_cycles();
  bandwidth_.advance(now);
  // Admit transfers whose latency has passed, in arrival order.
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
  for (const auto task : bandwidth_.take_finished()) run_.finish(task);
  std::int64_t next = bandwidth_.next_completion(now);
  for (const auto& w : waiting_) {
    if (next < 0 || w.enters_cycles < next) next = w.enters_cycles;
  }
  worker_.wake_within(next < 0 ? -1 : next - now);
}

}  // namespace pipetwin::sim
