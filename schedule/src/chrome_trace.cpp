// Chrome trace JSON (the Trace Event Format read by Perfetto and chrome://tracing).
#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/views.hpp"

namespace pipetwin {

std::string chrome_trace_json(const TaskGraph& g, const Result& r) { return chrome_trace_json(g, std::vector<const Result*>{&r}); }

std::string chrome_trace_json(const TaskGraph& g, const std::vector<const Result*>& results) {
  return chrome_trace_json(g, results, TraceRanks{});
}

std::string chrome_trace_json(const TaskGraph& g, const std::vector<const Result*>& results, const TraceRanks& ranks) {
  using json = nlohmann::ordered_json;
  const bool by_rank = !ranks.rank_of_processor.empty();
  if (by_rank && (ranks.rank_of_processor.size() != g.processors.size() || ranks.rank_of_link.size() != g.links.size())) {
    throw Error("a trace by rank needs the rank of every processor and link");
  }
  std::int32_t rank_count = 0;
  for (const auto r : ranks.rank_of_processor) rank_count = std::max(rank_count, r + 1);
  const double us_per_cycle = 1e6 / g.clock_hz;
  auto us = [&](std::int64_t cycles) { return static_cast<double>(cycles) * us_per_cycle; };
  std::ostringstream out;
  bool first = true;
  auto emit = [&](const json& event) {
    out << (first ? "\n  " : ",\n  ") << event.dump();
    first = false;
  };
  std::vector<std::string> engines;
  for (const Result* r : results) engines.push_back(r->engine);
  out << "{\"displayTimeUnit\": \"ns\", \"otherData\": "
      << json({{"schedule", g.schedule}, {"model", g.model}, {"hardware", g.hardware},
               {"engine", engines.size() == 1 ? json(engines.front()) : json(engines)}, {"clock_hz", g.clock_hz}})
             .dump()
      << ", \"traceEvents\": [";
  int next_pid = 1;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = *results[i];
    // Where each processor's and link's tasks go: (pid, tid). Two processes (processors, links),
    // or for a run across processes one per rank, its links numbered after the processors.
    const auto P = static_cast<std::int32_t>(g.processors.size());
    std::vector<std::pair<int, std::int64_t>> processor_at(g.processors.size()), link_at(g.links.size());
    const bool ranked = by_rank && i == 0;
    const int processors_pid = next_pid, links_pid = ranked ? next_pid : next_pid + 1;
    if (ranked) {
      for (std::int32_t k = 0; k < rank_count; ++k) {
        emit({{"ph", "M"}, {"pid", next_pid + k}, {"name", "process_name"},
              {"args", {{"name", "rank " + std::to_string(k) + " (" + r.engine + ")"}}}});
      }
      for (std::int32_t p = 0; p < P; ++p) processor_at[p] = {next_pid + ranks.rank_of_processor[p], p};
      for (std::size_t l = 0; l < g.links.size(); ++l) link_at[l] = {next_pid + ranks.rank_of_link[l], P + static_cast<std::int64_t>(l)};
      next_pid += rank_count;
    } else {
      const std::string links_name = results.size() == 1 ? std::string("links") : "links (" + r.engine + ")";
      emit({{"ph", "M"}, {"pid", processors_pid}, {"name", "process_name"},
            {"args", {{"name", "processors (" + r.engine + ")"}}}});
      emit({{"ph", "M"}, {"pid", links_pid}, {"name", "process_name"}, {"args", {{"name", links_name}}}});
      for (std::int32_t p = 0; p < P; ++p) processor_at[p] = {processors_pid, p};
      for (std::size_t l = 0; l < g.links.size(); ++l) link_at[l] = {links_pid, static_cast<std::int64_t>(l)};
      next_pid += 2;
    }
    for (int p = 0; p < g.processor_count(); ++p) {
      emit({{"ph", "M"}, {"pid", processor_at[p].first}, {"tid", processor_at[p].second}, {"name", "thread_name"},
            {"args", {{"name", g.processors[p].name}}}});
    }
    for (std::size_t l = 0; l < g.links.size(); ++l) {
      emit({{"ph", "M"}, {"pid", link_at[l].first}, {"tid", link_at[l].second}, {"name", "thread_name"},
            {"args", {{"name", g.links[l].name}}}});
    }
    for (const auto& t : g.tasks) {
      const TaskTiming& time = r.tasks[t.id];
      json args = {{"task", t.id}, {"cycles", time.end_cycles - time.start_cycles},
                   {"layers", std::to_string(t.first_layer) + "-" + std::to_string(t.last_layer)}};
      if (t.version_read >= 0) args["weight_version"] = t.version_read;
      if (t.bytes) args["bytes"] = t.bytes;
      const auto& at = t.placement == Placement::processor ? processor_at[t.resource] : link_at[t.resource];
      emit({{"ph", "X"}, {"pid", at.first}, {"tid", at.second}, {"name", task_label(t)}, {"cat", to_string(t.kind)},
            {"ts", us(time.start_cycles)}, {"dur", us(time.end_cycles - time.start_cycles)},
            {"args", args}});
    }
    for (const auto& idle : r.idle_spans) {
      json args = {{"cycles", idle.end_cycles - idle.start_cycles}};
      if (idle.waiting_for >= 0) args["waiting_for"] = task_label(g.tasks[idle.waiting_for]);
      emit({{"ph", "X"}, {"pid", processor_at[idle.processor].first}, {"tid", processor_at[idle.processor].second},
            {"name", std::string("bubble: ") + to_string(idle.reason)}, {"cat", "bubble"},
            {"ts", us(idle.start_cycles)}, {"dur", us(idle.end_cycles - idle.start_cycles)},
            {"args", args}});
    }
    for (std::size_t p = 0; p < r.memory_timeline.size(); ++p) {
      for (const auto& point : r.memory_timeline[p]) {
        emit({{"ph", "C"}, {"pid", processor_at[p].first}, {"name", "memory " + g.processors[p].name},
              {"ts", us(point.time_cycles)}, {"args", {{"bytes", point.bytes}}}});
      }
    }
    for (const auto& point : r.host_memory_timeline) {
      emit({{"ph", "C"}, {"pid", links_pid}, {"name", "host memory"}, {"ts", us(point.time_cycles)},
            {"args", {{"bytes", point.bytes}}}});
    }
  }
  out << "\n]}\n";
  return out.str();
}

}  // namespace pipetwin
