// The summary as an engine observer: task times from the starts and ends an engine reports, and
// memory from its allocations and frees (a MemoryObserver). Every engine's Result is this
// observer's result(): what the engine told its observers, summarized the same way for all.
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/memory_observer.hpp"
#include "pipetwin/schedule/result.hpp"

namespace pipetwin {

class SummaryObserver final : public EngineObserver {
 public:
  explicit SummaryObserver(const TaskGraph& graph);
  void task_started(std::int32_t task, std::int64_t cycles) override;
  void task_ended(std::int32_t task, std::int64_t cycles) override;
  void allocated(const MemoryChange& change) override { memory_.allocated(change); }
  void freed(const MemoryChange& change) override { memory_.freed(change); }
  // Throws naming the first task that was not reported started and ended exactly once.
  Result result(const std::string& engine, bool record_memory_timeline) const;

 private:
  const TaskGraph& graph_;
  std::vector<TaskTiming> times_;
  std::vector<int> starts_, ends_;  // reports per task
  MemoryObserver memory_;
};

}  // namespace pipetwin
