// One interface for every engine that runs a task graph (docs/design.md, "Engines"): the
// analytic evaluator and the SystemC simulator predict, the CPU and CUDA executors measure. Each
// returns the one Result schema and tells observers what happened: every task's start and end,
// every allocation and free (on a processor, or kHost for host memory). Predicting engines
// replay the graph's declared memory effects at the simulated times; executors report what they
// really hold, as it happens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// One allocation or free an engine reports: which buffer, where, how many bytes, the task that
// allocates or frees it (-1: the initial state) and when.
struct MemoryChange {
  BufferName buffer;
  std::int32_t where = 0;  // a processor, or kHost
  std::int64_t bytes = 0;
  std::int32_t task = -1;
  std::int64_t cycles = 0;
};

// Called from the engine's threads, one call at a time (engines serialise the calls).
class EngineObserver {
 public:
  virtual void task_started(std::int32_t /*task*/, std::int64_t /*cycles*/) {}
  virtual void task_ended(std::int32_t /*task*/, std::int64_t /*cycles*/) {}
  virtual void allocated(const MemoryChange& /*change*/) {}
  virtual void freed(const MemoryChange& /*change*/) {}
  // Executors that time layers (TrainingOptions::record_layer_times): one layer's part of a
  // task (its F, BA or BW work, or its share of an update), timed alone; of a backward's seconds,
  // `to_linear_s` went back to the layer's linear output (0 for other kinds). Told once every
  // task has ended, in task order (told live, they would contend with the tasks they time).
  virtual void layer_timed(std::int32_t /*task*/, std::int32_t /*layer*/, TaskKind /*kind*/, double /*seconds*/,
                           double /*to_linear_s*/) {}

 protected:
  ~EngineObserver() = default;
};

struct EngineOptions {
  bool record_memory_timeline = false;
  std::vector<EngineObserver*> observers;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;  // "analytic", "systemc", "cpu", "cuda"
  virtual bool measures() const = 0;     // an executor (true) or a prediction (false)
  virtual Result run(const TaskGraph& graph, const EngineOptions& options) = 0;
};

// The analytic evaluator as an engine.
class AnalyticEngine final : public Engine {
 public:
  std::string name() const override { return "analytic"; }
  bool measures() const override { return false; }
  Result run(const TaskGraph& graph, const EngineOptions& options) override;
};

// What a predicting engine tells observers once it has the task times: starts, ends and the
// graph's declared memory effects, in time order (at equal times: ends and frees of tasks that
// took time first, then starts, allocations and instant tasks' ends in a topological order).
void replay_to_observers(const TaskGraph& graph, const std::vector<TaskTiming>& times,
                         const std::vector<EngineObserver*>& observers);

// A predicting engine's Result: its times replayed to a SummaryObserver and to the options'
// observers, and the summary of what they were told (with no observers, summarize() of the times:
// the same Result without the replay).
Result summarize_replay(const TaskGraph& graph, const std::vector<TaskTiming>& times, const std::string& engine,
                        const EngineOptions& options);

// An observer that keeps the events per processor (kHost's under processors.size()), in the
// order they came: for tests and for checking one engine against another.
class EventLog final : public EngineObserver {
 public:
  enum class Kind { start, end, alloc, free };
  struct Event {
    Kind kind;
    std::int32_t task;
    std::int64_t bytes;
    std::int64_t cycles;
    BufferName buffer;  // alloc, free: which buffer
  };
  explicit EventLog(const TaskGraph& graph);
  void task_started(std::int32_t task, std::int64_t cycles) override;
  void task_ended(std::int32_t task, std::int64_t cycles) override;
  void allocated(const MemoryChange& change) override;
  void freed(const MemoryChange& change) override;
  const std::vector<Event>& on_processor(std::int32_t p) const { return processors_[static_cast<std::size_t>(p)]; }
  const std::vector<Event>& on_link(std::int32_t k) const { return links_[static_cast<std::size_t>(k)]; }
  const std::vector<Event>& in_host_memory() const { return processors_.back(); }

 private:
  std::vector<Event>& of_task(std::int32_t task);
  const TaskGraph& graph_;
  std::vector<std::vector<Event>> processors_;  // memory and task events per processor, then host memory
  std::vector<std::vector<Event>> links_;       // task events per link
};

}  // namespace pipetwin
