// The result of running a schedule, predicted or measured: one schema for every engine
// (DESIGN.md §2). Times in cycles of the graph's clock; seconds alongside.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pipetwin {

struct TaskTiming {
  std::int64_t start_cycles = 0;
  std::int64_t end_cycles = 0;
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
  std::vector<std::int64_t> peak_memory_bytes;  // per processor
  std::vector<std::int64_t> link_bytes;      // per link
};

}  // namespace pipetwin
