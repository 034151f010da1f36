// Hands an executor's events to its engine observers, one call at a time (the executor's threads
// report concurrently), with times in cycles of the graph's clock since the run's start.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "pipetwin/schedule/engine.hpp"

namespace pipetwin::exec {

class ObserverHub {
 public:
  ObserverHub(std::vector<EngineObserver*> observers, double clock_hz) : observers_(std::move(observers)), clock_hz_(clock_hz) {}
  void restart(std::chrono::steady_clock::time_point start) { start_ = start; }
  bool empty() const { return observers_.empty(); }
  void started(std::int32_t task) { tell([&](EngineObserver& o, std::int64_t at) { o.task_started(task, at); }); }
  void ended(std::int32_t task) { tell([&](EngineObserver& o, std::int64_t at) { o.task_ended(task, at); }); }
  void allocated(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
    tell([&](EngineObserver& o, std::int64_t at) { o.allocated({buffer, where, bytes, task, at}); });
  }
  void freed(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
    tell([&](EngineObserver& o, std::int64_t at) { o.freed({buffer, where, bytes, task, at}); });
  }

 private:
  template <typename Call>
  void tell(Call call) {
    if (observers_.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const auto at = static_cast<std::int64_t>(seconds * clock_hz_);
    for (auto* o : observers_) call(*o, at);
  }

  std::vector<EngineObserver*> observers_;
  double clock_hz_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
};

}  // namespace pipetwin::exec
