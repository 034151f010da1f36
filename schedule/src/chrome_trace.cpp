// Chrome trace JSON (the Trace Event Format read by Perfetto and chrome://tracing).
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/views.hpp"

namespace pipetwin {

std::string chrome_trace_json(const TaskGraph& g, const Result& r) { return chrome_trace_json(g, std::vector<const Result*>{&r}); }

std::string chrome_trace_json(const TaskGraph& g, const std::vector<const Result*>& results) {
  using json = nlohmann::ordered_json;
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
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = *results[i];
    const int processors_pid = 2 * static_cast<int>(i) + 1, links_pid = processors_pid + 1;
    const std::string links_name = results.size() == 1 ? std::string("links") : "links (" + r.engine + ")";
    emit({{"ph", "M"}, {"pid", processors_pid}, {"name", "process_name"},
          {"args", {{"name", "processors (" + r.engine + ")"}}}});
    emit({{"ph", "M"}, {"pid", links_pid}, {"name", "process_name"}, {"args", {{"name", links_name}}}});
    for (int p = 0; p < g.processor_count(); ++p) {
      emit({{"ph", "M"}, {"pid", processors_pid}, {"tid", p}, {"name", "thread_name"},
            {"args", {{"name", g.processors[p].name}}}});
    }
    for (std::size_t l = 0; l < g.links.size(); ++l) {
      emit({{"ph", "M"}, {"pid", links_pid}, {"tid", l}, {"name", "thread_name"},
            {"args", {{"name", g.links[l].name}}}});
    }
    for (const auto& t : g.tasks) {
      const TaskTiming& time = r.tasks[t.id];
      json args = {{"task", t.id}, {"cycles", time.end_cycles - time.start_cycles},
                   {"layers", std::to_string(t.first_layer) + "-" + std::to_string(t.last_layer)}};
      if (t.version_read >= 0) args["weight_version"] = t.version_read;
      if (t.bytes) args["bytes"] = t.bytes;
      emit({{"ph", "X"}, {"pid", t.placement == Placement::processor ? processors_pid : links_pid},
            {"tid", t.resource}, {"name", task_label(t)}, {"cat", to_string(t.kind)},
            {"ts", us(time.start_cycles)}, {"dur", us(time.end_cycles - time.start_cycles)},
            {"args", args}});
    }
    for (const auto& idle : r.idle_spans) {
      json args = {{"cycles", idle.end_cycles - idle.start_cycles}};
      if (idle.waiting_for >= 0) args["waiting_for"] = task_label(g.tasks[idle.waiting_for]);
      emit({{"ph", "X"}, {"pid", processors_pid}, {"tid", idle.processor},
            {"name", std::string("bubble: ") + to_string(idle.reason)}, {"cat", "bubble"},
            {"ts", us(idle.start_cycles)}, {"dur", us(idle.end_cycles - idle.start_cycles)},
            {"args", args}});
    }
    for (std::size_t p = 0; p < r.memory_timeline.size(); ++p) {
      for (const auto& point : r.memory_timeline[p]) {
        emit({{"ph", "C"}, {"pid", processors_pid}, {"name", "memory " + g.processors[p].name},
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
