// A link medium as a SystemC method process: it wakes at arrivals and at the earliest
// completion, advancing every active transfer by its equal share of the bandwidth in between.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "link_medium.hpp"

#include <algorithm>
#include <cmath>

namespace pipetwin::sim {
namespace {
constexpr double kDone = 1e-6;  // remaining service below this is finished
}

LinkMedium::LinkMedium(RunState& run, WorkerLease& lease) : run_(run), worker_(lease.borrow(*this)) {}

void LinkMedium::arrive(std::int32_t task) {
  const Task& t = run_.graph().tasks[task];
  run_.start(task);
  waiting_.push_back({run_.now_cycles() + run_.graph().links[t.resource].latency_cycles, task});
  worker_.wake().notify(sc_core::SC_ZERO_TIME);
}

void LinkMedium::advance(std::int64_t now) {
  if (!active_.empty() && now > last_update_) {
    const double share = static_cast<double>(now - last_update_) / static_cast<double>(active_.size());
    for (auto& a : active_) a.remaining_cycles -= share;
  }
  last_update_ = now;
}

void LinkMedium::step() {
  const std::int64_t now = run_.now_cycles();
  advance(now);
  // Admit transfers whose latency has passed, in arrival order.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->enters_cycles <= now) {
      const Task& t = run_.graph().tasks[it->task];
      const std::int64_t service = std::max<std::int64_t>(
          0, t.cost_cycles - run_.graph().links[t.resource].latency_cycles);
      active_.push_back({it->task, static_cast<double>(service)});
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // Finish what is done (in admission order, so equal finishes are deterministic).
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->remaining_cycles <= kDone) {
      const std::int32_t task = it->task;
      it = active_.erase(it);
      run_.finish(task);
    } else {
      ++it;
    }
  }
  // Next: the earliest completion at the current share, or the earliest admission.
  std::int64_t next = -1;
  if (!active_.empty()) {
    double least = active_.front().remaining_cycles;
    for (const auto& a : active_) least = std::min(least, a.remaining_cycles);
    next = now + static_cast<std::int64_t>(std::ceil(least * static_cast<double>(active_.size()) - kDone));
    next = std::max(next, now + 1);
  }
  for (const auto& w : waiting_) {
    if (next < 0 || w.enters_cycles < next) next = w.enters_cycles;
  }
  if (next < 0) {
    sc_core::next_trigger(worker_.wake());
  } else {
    sc_core::next_trigger(sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(next - now)), worker_.wake());
  }
}

}  // namespace pipetwin::sim
