// Live and peak bytes per processor and host memory, under one lock.
#include "memory_tracker.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

namespace {
std::string gigabytes(std::int64_t bytes) { return std::to_string(static_cast<double>(bytes) / 1e9) + " GB"; }
}  // namespace

MemoryTracker::MemoryTracker(const TaskGraph& graph, std::chrono::steady_clock::time_point start, bool record_timeline,
                             ObserverHub& observers)
    : graph_(graph), start_(start), record_timeline_(record_timeline), observers_(observers) {
  const std::size_t slots = graph.processors.size() + 1;
  live_.assign(slots, 0);
  peak_.assign(slots, 0);
  timeline_.resize(slots);
  for (const auto& p : graph.processors) capacity_.push_back(p.memory_capacity_bytes);
  capacity_.push_back(graph.host_memory_capacity_bytes);
}


void MemoryTracker::record(std::size_t s) {
  if (!record_timeline_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  timeline_[s].push_back({static_cast<std::int64_t>(seconds * graph_.clock_hz), live_[s]});
}

void MemoryTracker::allocate(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t s = memory_slot(graph_, where);
  if (capacity_[s] > 0 && live_[s] + bytes > capacity_[s]) {
    const std::string place = where == kHost ? "host memory" : graph_.processors[s].name;
    const std::string who = task < 0 ? std::string("the initial weights") : describe_task(graph_, graph_.tasks[static_cast<std::size_t>(task)]);
    throw Error("out of memory on " + place + ": " + who +
                " needs " + std::to_string(bytes) + " bytes with " + gigabytes(live_[s]) + " live, capacity " +
                gigabytes(capacity_[s]));
  }
  live_[s] += bytes;
  peak_[s] = std::max(peak_[s], live_[s]);
  record(s);
  observers_.allocated(buffer, where, bytes, task);
}

void MemoryTracker::release(const BufferName& buffer, std::int32_t where, std::int64_t bytes, std::int32_t task) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t s = memory_slot(graph_, where);
  live_[s] -= bytes;
  record(s);
  observers_.freed(buffer, where, bytes, task);
}

std::vector<std::int64_t> MemoryTracker::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {peak_.begin(), peak_.end() - 1};
}

std::int64_t MemoryTracker::host_peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_.back();
}

std::vector<std::vector<MemoryPoint>> MemoryTracker::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {timeline_.begin(), timeline_.end() - 1};
}

std::vector<MemoryPoint> MemoryTracker::host_timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_.back();
}

}  // namespace pipetwin::exec
