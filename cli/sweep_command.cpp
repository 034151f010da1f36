// `pipetwin sweep`: schedules x processor counts, each configuration simulated (or evaluated) in
// a pool of worker processes, one table (or CSV / JSON) with speedups over a baseline at P = 1.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "engines.hpp"
#include "graph_options.hpp"
#include "output_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "process_pool.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

struct SweepOptions {
  GraphOptions graph;
  std::string schedules = "all";
  std::string baseline = "sequential";
  std::string engine;
  std::string csv_file;
  bool json = false;
  int jobs = 0;
};

struct Row {
  std::string schedule;
  int processors = 0;
  nlohmann::json result;  // result_to_json, or null
  std::string error;
};

// One configuration, in a worker: a JSON line with the summary, or the error.
std::string run_one(const std::string& engine, const GraphConfig& config) {
  try {
    const Evaluated e = build_and_run(engine, config, false);
    nlohmann::json out = result_to_json(e.graph, e.result, false);
    out["ok"] = true;
    return out.dump();
  } catch (const std::exception& error) {
    return nlohmann::json({{"ok", false}, {"error", error.what()}}).dump();
  }
}

class ProgressBar {
 public:
  ProgressBar(std::size_t total) : total_(total), shown_(::isatty(STDERR_FILENO) && std::getenv("CI") == nullptr) {}
  void update(std::size_t done) {
    if (!shown_) return;
    const std::size_t width = 30, filled = total_ ? done * width / total_ : width;
    std::cerr << "\rsweep [" << std::string(filled, '#') << std::string(width - filled, '.') << "] "
              << done << "/" << total_ << " configurations" << std::flush;
    if (done == total_) std::cerr << "\r" << std::string(70, ' ') << "\r" << std::flush;
  }

 private:
  std::size_t total_;
  bool shown_;
};

std::string csv_escape(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void run(const SweepOptions& options) {
  check_engine(options.engine);
  const auto schedules = parse_schedule_list(options.schedules);
  if (!options.baseline.empty()) find_schedule(options.baseline);
  const auto counts = parse_procs(options.graph.procs);
  const int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // Configurations, largest first so the round-robin split over workers balances.
  std::vector<Row> rows;
  for (const auto& s : schedules) {
    for (const int p : counts) rows.push_back({s, p, nullptr, ""});
  }
  if (!options.baseline.empty()) rows.push_back({options.baseline, 1, nullptr, ""});  // the baseline
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a].processors > rows[b].processors; });
  ProgressBar bar(rows.size());
  const auto lines = run_in_processes(
      rows.size(), jobs,
      [&](std::size_t k) {
        GraphConfig config = options.graph.config;
        config.schedule = rows[order[k]].schedule;
        config.processors = rows[order[k]].processors;
        return run_one(options.engine, without_other_schedules_params(config));
      },
      [&](std::size_t done) { bar.update(done); });
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const nlohmann::json parsed = nlohmann::json::parse(lines[k]);
    Row& row = rows[order[k]];
    if (parsed.at("ok").get<bool>()) {
      row.result = parsed;
    } else {
      row.error = parsed.at("error").get<std::string>();
    }
  }
  double baseline_iteration = 0;
  if (!options.baseline.empty()) {
    const Row baseline = rows.back();
    rows.pop_back();
    if (!baseline.error.empty()) throw Error("baseline " + options.baseline + " at P=1: " + baseline.error);
    baseline_iteration = baseline.result.at("iteration_cycles").get<double>();
  }

  auto number = [](const nlohmann::json& r, const char* key) { return r.at(key).get<double>(); };
  auto max_peak = [](const nlohmann::json& r) {
    std::int64_t peak = 0;
    for (const auto& v : r.at("peak_memory_bytes")) peak = std::max(peak, v.get<std::int64_t>());
    return peak;
  };
  auto speedup = [&](const nlohmann::json& r) {
    return baseline_iteration > 0 ? baseline_iteration / number(r, "iteration_cycles") : 0.0;
  };

  if (!options.csv_file.empty()) {
    std::ostringstream csv;
    csv << "schedule,processors,total_cycles,total_s,iteration_cycles,iteration_s,speedup,"
           "mean_utilization,bubble_fraction,max_peak_memory_bytes,link_bytes,out_of_memory,error\n";
    for (const auto& row : rows) {
      csv << row.schedule << "," << row.processors;
      if (row.error.empty()) {
        const auto& r = row.result;
        csv << fmt::format(",{},{},{},{},{},{},{},{},{},{},", r.at("total_cycles").get<std::int64_t>(),
                           number(r, "total_s"), number(r, "iteration_cycles"), number(r, "iteration_s"),
                           speedup(r), number(r, "mean_utilization"), number(r, "bubble_fraction"),
                           max_peak(r), r.at("total_link_bytes").get<std::int64_t>(),
                           r.at("out_of_memory").empty() ? "" : csv_escape(r.at("out_of_memory")[0].get<std::string>()));
        csv << "\n";
      } else {
        csv << ",,,,,,,,,,," << csv_escape(row.error) << "\n";
      }
    }
    write_output_file(options.csv_file, csv.str());
  }
  if (options.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& row : rows) {
      nlohmann::ordered_json item = {{"schedule", row.schedule}, {"processors", row.processors}};
      if (row.error.empty()) {
        item["speedup"] = speedup(row.result);
        item["result"] = row.result;
      } else {
        item["error"] = row.error;
      }
      out.push_back(item);
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  const auto& config = options.graph.config;
  std::cout << fmt::format("sweep · {} · {} · {} microbatches · {} minibatches · {} · {} worker processes\n",
                           config.model, config.hardware, config.microbatches, config.minibatches,
                           options.engine == "analytic" ? "analytic evaluator" : "SystemC simulator", jobs);
  Table table({"schedule", "P", "cycles", "seconds", "iteration_cycles", "speedup", "mean_util",
               "bubble", "max_peak_memory", "link_bytes", "note"},
              true);
  for (const auto& row : rows) {
    if (!row.error.empty()) {
      table.add_row({row.schedule, std::to_string(row.processors), "-", "-", "-", "-", "-", "-", "-", "-", row.error});
      continue;
    }
    const auto& r = row.result;
    table.add_row({row.schedule, std::to_string(row.processors), std::to_string(r.at("total_cycles").get<std::int64_t>()),
                   fmt::format("{:.4g}", number(r, "total_s")), fmt::format("{:.0f}", number(r, "iteration_cycles")),
                   baseline_iteration > 0 ? fmt::format("{:.2f}x", speedup(r)) : "-",
                   fmt::format("{:.3f}", number(r, "mean_utilization")),
                   fmt::format("{:.1f}%", 100 * number(r, "bubble_fraction")), human_bytes(max_peak(r)),
                   human_bytes(r.at("total_link_bytes").get<std::int64_t>()),
                   r.at("out_of_memory").empty() ? "" : "out of memory"});
  }
  table.print(std::cout);
  if (baseline_iteration > 0) {
    std::cout << "speedup: steady-state iteration time of " << options.baseline
              << " at P=1 over that of the row\n";
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  auto* command = app.add_subcommand(
      "sweep", "run every schedule at every processor count (in parallel worker processes) and "
               "compare: cycles, seconds, period, speedup over a baseline, utilization, memory");
  add_graph_options(*command, options->graph, "1-9");
  command->remove_option(command->get_option("--schedule"));
  command->add_option("--schedules", options->schedules, "comma-separated schedules, or all (every schedule that needs no file)")->capture_default_str();
  command->add_option("--baseline", options->baseline, "schedule whose P=1 period speedups are relative to")
      ->capture_default_str();
  options->engine = default_engine();
  command->add_option("--engine", options->engine, "systemc or analytic")->capture_default_str();
  command->add_option("--csv", options->csv_file, "also write the table as CSV to this file");
  command->add_flag("--json", options->json, "print JSON instead of the table");
  command->add_option("--jobs,-j", options->jobs, "worker processes (default: all cores)");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
