// Bytes really held per processor (and in host memory) while the executor runs, with a clear
// error when an allocation crosses a capacity. Every allocation and free is told to the run's
// observers, named by the buffer it is (the run's peaks and timelines come from them).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "observer_hub.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

class MemoryTracker {
 public:
  MemoryTracker(const TaskGraph& graph, ObserverHub& observers);
  // `buffer` names what is held (told to the observers, matched against the graph's declared
  // buffers); `where` is a processor index or kHost; `task` (-1: the initial state) is the task
  // that allocates or frees it, named in the error. Zero bytes are no event.
  void allocate(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task);
  void release(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task);

 private:
  const TaskGraph& graph_;
  ObserverHub& observers_;
  std::mutex mutex_;
  std::vector<std::int64_t> live_, capacity_;  // processors, then host
};

}  // namespace pipetwin::exec
