// The result of running a schedule, predicted or measured: one schema for every engine
// (docs/design.md, "The task graph"). Times in cycles of the graph's clock; seconds alongside. Engines produce task
// times; summarize() (summary.hpp) derives everything else the same way for all of them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pipetwin {

struct TaskTiming {
  std::int64_t start_cycles = 0;
  std::int64_t end_cycles = 0;
};

// Why a processor sat idle.
enum class IdleReason {
  waiting_on_data,    // its next task waits for a compute task elsewhere
  waiting_on_link,    // its next task waits for a transfer (or offload / reload)
  waiting_on_memory,  // reserved: engines that stall on memory (none yet)
  nothing_to_do,      // no task left for it
};
const char* to_string(IdleReason reason);

struct IdleSpan {
  std::int32_t processor = 0;
  std::int64_t start_cycles = 0;
  std::int64_t end_cycles = 0;
  IdleReason reason = IdleReason::nothing_to_do;
  std::int32_t waiting_for = -1;  // the dependency that ended last, or -1
};

struct IdleCycles {
  std::int64_t waiting_on_data = 0;
  std::int64_t waiting_on_link = 0;
  std::int64_t waiting_on_memory = 0;
  std::int64_t nothing_to_do = 0;
};

struct MemoryPoint {
  std::int64_t time_cycles = 0;
  std::int64_t bytes = 0;  // live bytes from this time on
};

struct OutOfMemory {
  std::int32_t processor = 0;         // kHost (-1) for host memory
  std::int32_t task = 0;              // the task whose allocation crossed the capacity
  std::int64_t time_cycles = 0;
  std::int64_t live_bytes = 0;
  std::int64_t capacity_bytes = 0;
};

struct Result {
  std::string engine;                        // "analytic", "systemc", "cpu", "cuda"
  std::vector<TaskTiming> tasks;             // per task id
  std::int64_t total_cycles = 0;
  double total_s = 0;
  double iteration_cycles = 0;               // steady-state cycles per minibatch
  double iteration_s = 0;
  std::vector<std::int64_t> busy_cycles;     // per processor
  std::vector<double> utilization;           // per processor: busy / total
  double mean_utilization = 0;
  double bubble_fraction = 0;                // 1 - mean utilization
  std::vector<IdleCycles> idle_cycles;       // per processor, by reason
  std::vector<IdleSpan> idle_spans;          // every idle span of every processor
  std::vector<std::int64_t> peak_memory_bytes;  // per processor
  // Per processor: a steady-state step's peak, the median over the second half of the run's
  // minibatches of the peak within each (steady_step_bounds, summary.hpp). The whole run's peak
  // above also holds its first minibatch, and any step that timing jitter reorders.
  std::vector<std::int64_t> step_peak_memory_bytes;
  // Per processor, the same of the bytes held while its forwards and backwards run (after each
  // memory event of a task other than an update): without the weight version an update holds
  // only while it runs, what the compute's data competes for the caches with (docs/executor.md,
  // "What a footprint costs").
  std::vector<std::int64_t> step_compute_peak_memory_bytes;
  std::vector<std::vector<MemoryPoint>> memory_timeline;  // per processor, when recorded
  std::vector<OutOfMemory> out_of_memory;    // the first crossing per processor (and host)
  std::int64_t host_peak_memory_bytes = 0;   // offloaded bytes held in host memory
  std::vector<MemoryPoint> host_memory_timeline;  // when recorded
  std::vector<std::int64_t> link_bytes;      // per link
  std::vector<std::int64_t> link_busy_cycles;  // per link: time with a transfer on it
  std::vector<double> link_utilization;      // per link: busy / total
};

}  // namespace pipetwin
