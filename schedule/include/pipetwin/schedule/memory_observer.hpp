// Memory tracking as an engine observer: live bytes per processor and in host memory from the
// allocations and frees an engine reports, with peaks, the first crossing of each capacity and,
// when asked, the timeline. The summary of every predicting engine's Result is this observer fed
// the graph's declared memory effects at the predicted times.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/summary.hpp"

namespace pipetwin {

// One declared memory effect: a buffer allocated when its allocating task starts, or freed when
// the last of its `freed_after` tasks ends (the change names that task).
struct MemoryEffect {
  MemoryChange change;
  bool allocates = true;
};

// The graph's declared buffers at the given task times, buffer by buffer (allocation, then free).
// Buffers held from before the run are the initial state, not in it. Throws when a buffer would
// be freed before it is allocated (a graph whose declared readers can run before its allocator).
std::vector<MemoryEffect> declared_memory_effects(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// The initial state, told as allocations by task -1 at time 0: each processor's static bytes,
// the buffers held from before the run, and empty host memory.
void tell_initial_memory(const TaskGraph& graph, EngineObserver& observer);

class MemoryObserver final : public EngineObserver {
 public:
  explicit MemoryObserver(const TaskGraph& graph);
  void allocated(const MemoryChange& change) override;
  void freed(const MemoryChange& change) override;
  // Each memory's events replayed in time order: the initial state (task -1 at time 0) first,
  // then frees before allocations at equal times, then by task id. `step_bounds` (ascending
  // times; steady_step_bounds in summary.hpp) cut the run into steps for the processors' step
  // peaks (MemoryReport::step_peak_bytes); none: each step peak is the processor's peak.
  MemoryReport report(bool record_timeline, const std::vector<std::int64_t>& step_bounds = {}) const;

 private:
  struct Event {
    std::int64_t time;
    std::int64_t delta;
    std::int32_t task;
  };
  std::vector<Event>& of(std::int32_t where);
  const TaskGraph& graph_;
  std::vector<std::vector<Event>> events_;  // per processor, then host memory
};

}  // namespace pipetwin
