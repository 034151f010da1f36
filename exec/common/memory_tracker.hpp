// Bytes really held per processor (and in host memory) while the executor runs: live, peak,
// optionally a timeline, and a clear error when an allocation crosses a capacity. Every
// allocation and free is also told to the run's observers.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "observer_hub.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

class MemoryTracker {
 public:
  MemoryTracker(const TaskGraph& graph, std::chrono::steady_clock::time_point start, bool record_timeline,
                ObserverHub& observers);
  void restart(std::chrono::steady_clock::time_point start) { start_ = start; }
  // `buffer` names what is held (told to the observers, matched against the graph's declared
  // buffers); `where` is a processor index or kHost; `task` (-1: the initial state) is the task
  // that allocates or frees it, named in the error. Zero bytes are no event.
  void allocate(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task);
  void release(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task);
  std::vector<std::int64_t> peak_bytes() const;
  std::int64_t host_peak_bytes() const;
  std::vector<std::vector<MemoryPoint>> timeline() const;
  std::vector<MemoryPoint> host_timeline() const;

 private:
  void record(std::size_t slot);

  const TaskGraph& graph_;
  std::chrono::steady_clock::time_point start_;
  bool record_timeline_;
  ObserverHub& observers_;
  mutable std::mutex mutex_;
  std::vector<std::int64_t> live_, peak_, capacity_;  // processors, then host
  std::vector<std::vector<MemoryPoint>> timeline_;
};

}  // namespace pipetwin::exec
