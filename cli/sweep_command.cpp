// `pipetwin sweep`: schedules x processor counts, each configuration simulated (or evaluated) in
// a pool of worker processes, one table (or CSV / JSON) with speedups over a baseline at P = 1.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pipetwin/sim/engines.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/sim/sweep.hpp"
#include "process_pool.hpp"
#include "table.hpp"
#include "output_option.hpp"

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
  bool quiet = false;
};

// One configuration, in a worker: the core's row as a JSON line.
std::string run_one(const std::string& engine, const GraphConfig& config) { return sweep_row(engine, config).dump(); }

void run(const SweepOptions& options) {
  check_engine(options.engine);
  SweepRequest request;
  request.base = options.graph.config;
  request.schedules = parse_schedule_list(options.schedules);
  request.processors = parse_procs(options.graph.procs);
  request.baseline = options.baseline;
  const auto configs = sweep_configs(request);
  const int jobs = worker_count(options.jobs);

  // Largest first: the workers take jobs as they free up, and short ones last even out their ends.
  std::vector<std::size_t> order(configs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return configs[a].processors > configs[b].processors; });
  ProgressBar bar("sweep", configs.size(), options.quiet);
  const auto lines = run_in_processes(
      configs.size(), jobs, [&](std::size_t k) { return run_one(options.engine, configs[order[k]]); },
      [&](std::size_t done) { bar.update(done); }, [&](std::size_t k) { return describe_config(configs[order[k]]); });
  std::vector<nlohmann::ordered_json> rows(configs.size());
  for (std::size_t k = 0; k < lines.size(); ++k) rows[order[k]] = nlohmann::ordered_json::parse(lines[k]);
  rows = finish_sweep(request, std::move(rows));

  auto number = [](const nlohmann::ordered_json& r, const char* key) { return r.at(key).get<double>(); };
  auto ok = [](const nlohmann::ordered_json& r) { return r.at("error").get<std::string>().empty(); };
  if (!options.csv_file.empty()) write_output_file(options.csv_file, rows_to_csv(sweep_columns(), rows));
  if (options.json) {
    std::cout << nlohmann::ordered_json(rows).dump(2) << "\n";
    return;
  }
  const auto& config = options.graph.config;
  std::cout << fmt::format("sweep · {} · {} · {} microbatches · {} minibatches · {} · {}\n",
                           config.model, config.hardware, config.microbatches, config.minibatches,
                           options.engine == "analytic" ? "analytic evaluator" : "SystemC simulator", describe_workers(configs.size(), jobs));
  Table table({"schedule", "P", "cycles", "seconds", "iteration_cycles", "speedup", "mean_util",
               "bubble", "max_peak_memory", "link_bytes", "note"},
              true);
  for (const auto& r : rows) {
    const std::string schedule = r.at("schedule").get<std::string>();
    const std::string processors = std::to_string(r.at("processors").get<int>());
    if (!ok(r)) {
      table.add_row({schedule, processors, "-", "-", "-", "-", "-", "-", "-", "-", r.at("error").get<std::string>()});
      continue;
    }
    table.add_row({schedule, processors, std::to_string(r.at("total_cycles").get<std::int64_t>()),
                   fmt::format("{:.4g}", number(r, "total_s")), fmt::format("{:.0f}", number(r, "iteration_cycles")),
                   r.at("speedup").is_null() ? "-" : fmt::format("{:.2f}x", number(r, "speedup")),
                   fmt::format("{:.3f}", number(r, "mean_utilization")),
                   fmt::format("{:.1f}%", 100 * number(r, "bubble_fraction")),
                   human_bytes(r.at("max_peak_memory_bytes").get<std::int64_t>()),
                   human_bytes(r.at("link_bytes").get<std::int64_t>()),
                   r.at("out_of_memory").get<std::string>().empty() ? "" : "out of memory"});
  }
  table.print(std::cout);
  if (!options.baseline.empty()) {
    std::cout << "speedup: steady-state iteration time of " << options.baseline
              << " at P=1 (one replica) over that of the row, times the row's data-parallel replicas\n";
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  auto* command = app.add_subcommand(
      "sweep", "run every schedule at every processor count (in parallel worker processes) and "
               "compare: cycles, seconds, period, speedup over a baseline, utilization, memory");
  add_graph_options(*command, options->graph, "1-9", ProcessorCounts::list);
  command->remove_option(command->get_option("--schedule"));
  command->add_option("--schedules", options->schedules, "comma-separated schedules, or all (every schedule that needs no file)")->capture_default_str();
  command->add_option("--baseline", options->baseline,
                      "schedule whose steady-state iteration time at P=1 the speedups are relative to (empty: none)")
      ->capture_default_str();
  options->engine = default_engine();
  command->add_option("--engine", options->engine, "systemc or analytic")->capture_default_str();
  command->add_option("--csv", options->csv_file, "also write the table as CSV to this file")
      ->check(writable_output_file());
  command->add_flag("--json", options->json, "print the rows as JSON (the CSV's columns) instead of the table");
  add_jobs_option(*command, options->jobs);
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
