// Live bytes per processor and host memory, under one lock (see memory_tracker.hpp).
#include "memory_tracker.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

namespace {
std::string gigabytes(std::int64_t bytes) { return std::to_string(static_cast<double>(bytes) / 1e9) + " GB"; }
}  // namespace

MemoryTracker::MemoryTracker(const TaskGraph& graph, ObserverHub& observers) : graph_(graph), observers_(observers) {
  live_.assign(graph.processors.size() + 1, 0);
  for (const auto& p : graph.processors) capacity_.push_back(p.memory_capacity_bytes);
  capacity_.push_back(graph.host_memory_capacity_bytes);
}

void MemoryTracker::allocate(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t s = memory_slot(graph_, where);
  if (capacity_[s] > 0 && live_[s] + bytes > capacity_[s]) {
    const std::string place = where == kHost ? "host memory" : graph_.processors[s].name;
    const std::string who = task < 0 ? std::string("the initial weights") : describe_task(graph_, graph_.tasks[static_cast<std::size_t>(task)]);
    throw Error("out of memory on " + place + ": " + who + " needs " + std::to_string(bytes) + " bytes (" +
                to_string(buffer.kind) + ") with " + gigabytes(live_[s]) + " live, capacity " + gigabytes(capacity_[s]));
  }
  live_[s] += bytes;
  observers_.allocated(buffer, where, bytes, task);
}

void MemoryTracker::release(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  live_[memory_slot(graph_, where)] -= bytes;
  observers_.freed(buffer, where, bytes, task);
}

}  // namespace pipetwin::exec
