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

// One declared memory effect of a task: `bytes` (> 0) allocated at its start or freed at its end
// on `where` (a processor, or kHost).
struct MemoryEffect {
  std::int64_t time_cycles = 0;
  std::int32_t where = 0;
  std::int64_t bytes = 0;
  std::int32_t task = 0;
  bool allocates = true;
};

// The graph's declared effects at the given task times, task by task: a task's allocation at its
// start and free at its end on the processor it affects; an offload holds its bytes in host memory
// from its start, a reload releases them at its end. The initial state (static bytes) is not in
// it: it is each memory's allocation by task -1 at time 0.
std::vector<MemoryEffect> declared_memory_effects(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// The initial state, told as allocations by task -1 at time 0: each processor's static bytes,
// and empty host memory.
void tell_initial_memory(const TaskGraph& graph, EngineObserver& observer);

class MemoryObserver final : public EngineObserver {
 public:
  explicit MemoryObserver(const TaskGraph& graph);
  void allocated(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) override;
  void freed(std::int32_t where, std::int64_t bytes, std::int32_t task, std::int64_t cycles) override;
  // Each memory's events replayed in time order: the initial state (task -1 at time 0) first,
  // then frees before allocations at equal times, then by task id.
  MemoryReport report(bool record_timeline) const;

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
