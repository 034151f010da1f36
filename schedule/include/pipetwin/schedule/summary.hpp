// Everything a Result reports beyond task times, derived the same way for every engine: totals,
// busy and idle time per processor with each idle span attributed, steady-state period, memory
// over time with peaks and out-of-memory events, link bytes and utilization.
#pragma once
#include <nlohmann/json.hpp>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct MemoryReport;

// Every engine's Result comes from the events it reported (SummaryObserver); these take the task
// times directly (evaluate() and simulate(), the fast paths with no observers), with the memory
// report given or tracked from the graph's declared buffers. The conformance test checks both
// paths give the same Result.
Result summarize(const TaskGraph& graph, std::vector<TaskTiming> times, const std::string& engine,
                 MemoryReport memory);
Result summarize(const TaskGraph& graph, std::vector<TaskTiming> times, const std::string& engine,
                 bool record_memory_timeline = false);

// Steady-state cycles per minibatch from task end times. Synchronous schedules flush: the mean
// spacing of minibatch completions over the second half of the run (the total time when there
// is one minibatch). Asynchronous schedules stream: the mean spacing of microbatch completions
// between the warm-up and the cool-down (the first and last S microbatches, S stages), times the
// microbatches per minibatch; the whole stream if it is too short for that.
double steady_state_iteration_cycles(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// The steps of the steady state, for step peaks of memory: the end times of minibatches
// last/2, last/2 + 1, ..., last (each minibatch's end is its last task's), so that step k runs
// from minibatch k - 1's end to minibatch k's; the second half of the run, as the synchronous
// period is measured. Empty with fewer than 2 minibatches.
std::vector<std::int64_t> steady_step_bounds(const TaskGraph& graph, const std::vector<TaskTiming>& times);

// Live bytes per processor and in host memory over time, with peaks and out-of-memory events:
// a MemoryObserver's report (memory_observer.hpp). track_memory() feeds it the graph's declared
// buffers at the given task times.
struct MemoryReport {
  std::vector<std::int64_t> peak_bytes;
  // Per processor: the median over the steps (the step bounds given) of each step's peak, the
  // upper median (a peak some step reached); the peak where no steps were given.
  std::vector<std::int64_t> step_peak_bytes;
  // The same of the bytes held while tasks other than updates run (Result::step_compute_peak_memory_bytes).
  std::vector<std::int64_t> step_compute_peak_bytes;
  std::vector<std::vector<MemoryPoint>> timeline;  // filled when asked
  std::vector<OutOfMemory> out_of_memory;
  std::int64_t host_peak_bytes = 0;
  std::vector<MemoryPoint> host_timeline;          // filled when asked
};
MemoryReport track_memory(const TaskGraph& graph, const std::vector<TaskTiming>& times,
                          bool record_timeline);

// "out of memory on p0: task 12 F(k0,m3,s0) raised live memory to 81.2 GB, capacity 80 GB"
std::string describe_out_of_memory(const TaskGraph& graph, const OutOfMemory& event);

// The summary keys of `pipetwin evaluate/simulate --json` (per-task times under "task_times" when
// asked).
nlohmann::ordered_json result_to_json(const TaskGraph& graph, const Result& result,
                                      bool with_task_times);

}  // namespace pipetwin
