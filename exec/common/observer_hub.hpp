// Hands an executor's events to its engine observers, one call at a time (the executor's threads
// report concurrently), with times in cycles of the graph's clock since the run's start (the
// initial state, task -1, at time 0).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "pipetwin/schedule/engine.hpp"

namespace pipetwin::exec {

class ObserverHub {
 public:
  ObserverHub(std::vector<EngineObserver*> observers, double clock_hz, std::size_t tasks)
      : observers_(std::move(observers)), clock_hz_(clock_hz), started_at_(tasks, kNotStarted) {}
  void restart(std::chrono::steady_clock::time_point start) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_ = start;
    std::fill(started_at_.begin(), started_at_.end(), kNotStarted);
  }
  bool empty() const { return observers_.empty(); }
  // A task's start and end, measured by the caller at `at`.
  void started(std::int32_t task, std::chrono::steady_clock::time_point at) {
    if (observers_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      started_at_.at(static_cast<std::size_t>(task)) = at;
    }
    tell(at, [&](EngineObserver& o, std::int64_t cycles) { o.task_started(task, cycles); });
  }
  void ended(std::int32_t task, std::chrono::steady_clock::time_point at) {
    tell(at, [&](EngineObserver& o, std::int64_t cycles) { o.task_ended(task, cycles); });
  }
  // An allocation is told at the start of the task that makes it, as the graph declares its
  // buffers (docs/design.md, "Memory"): the executors account an output or a stash once the task
  // has made it, but its memory is taken while the task runs (a layer's output before its kernel
  // writes it, a copy's destination before the copy). A task not started here (another rank's,
  // whose payload this rank keeps): when it is told.
  void allocated(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
    tell(start_of(task), [&](EngineObserver& o, std::int64_t cycles) { o.allocated({buffer, where, bytes, task, cycles}); });
  }
  void freed(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
    tell(now(task), [&](EngineObserver& o, std::int64_t cycles) { o.freed({buffer, where, bytes, task, cycles}); });
  }
  void layer_timed(std::int32_t task, std::int32_t layer, TaskKind kind, double seconds, double to_linear_s) {
    tell(start_, [&](EngineObserver& o, std::int64_t) { o.layer_timed(task, layer, kind, seconds, to_linear_s); });
  }

 private:
  static constexpr std::chrono::steady_clock::time_point kNotStarted = std::chrono::steady_clock::time_point::min();
  std::chrono::steady_clock::time_point now(std::int32_t task) const {
    return task < 0 ? start_ : std::chrono::steady_clock::now();
  }
  std::chrono::steady_clock::time_point start_of(std::int32_t task) {
    if (task >= 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto index = static_cast<std::size_t>(task);
      if (index < started_at_.size() && started_at_[index] != kNotStarted) return started_at_[index];
    }
    return now(task);
  }
  template <typename Call>
  void tell(std::chrono::steady_clock::time_point at, Call call) {
    if (observers_.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const double seconds = std::max(0.0, std::chrono::duration<double>(at - start_).count());
    const auto cycles = static_cast<std::int64_t>(seconds * clock_hz_);
    for (auto* o : observers_) call(*o, cycles);
  }

  std::vector<EngineObserver*> observers_;
  double clock_hz_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<std::chrono::steady_clock::time_point> started_at_;  // per graph task, when told (kNotStarted: not yet)
  std::mutex mutex_;
};

}  // namespace pipetwin::exec
