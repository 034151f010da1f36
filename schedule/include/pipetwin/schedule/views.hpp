// Ways to look at a Result: a Chrome trace (opens in Perfetto) and an ASCII space-time diagram
// like the seed papers' figures. Both work for every engine's results.
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Chrome trace JSON: a track per processor (tasks, and idle spans labelled with their reason)
// and per link (transfers), memory as a counter track per processor (from
// Result::memory_timeline when recorded). Times in microseconds of the graph's clock.
std::string chrome_trace_json(const TaskGraph& graph, const Result& result);
// Several results of one graph in one trace (say, a prediction and a measurement), overlaid in
// Perfetto: result i gets its own two processes (pids 2i + 1 and 2i + 2), named by its engine.
std::string chrome_trace_json(const TaskGraph& graph, const std::vector<const Result*>& results);
// The same, with results[0] measured across processes: one process per rank, holding that rank's
// processors and links as threads (rank_of_processor[p], rank_of_link[l]: which rank ran them).
struct TraceRanks {
  std::vector<std::int32_t> rank_of_processor;
  std::vector<std::int32_t> rank_of_link;
};
std::string chrome_trace_json(const TaskGraph& graph, const std::vector<const Result*>& results, const TraceRanks& ranks);

// One row per processor, time across; each task shows as its kind and global microbatch number
// (F3, B2, W1 for a weight gradient, A1 for an activation gradient, U for an update), idle time
// as dots. At most `max_width` columns of time.
std::string space_time_diagram(const TaskGraph& graph, const Result& result, int max_width = 100);

}  // namespace pipetwin
