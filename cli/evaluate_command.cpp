// `pipetwin evaluate`: the analytic evaluator over one or more processor counts, as a table or
// JSON; or over a graph file written by `pipetwin schedule` (--graph).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

struct EvaluateOptions {
  GraphOptions graph;
  std::string graph_file;
  bool json = false;
  bool task_times = false;
  bool per_processor = false;
};

struct Evaluated {
  TaskGraph graph;
  Result result;
};

Evaluated evaluate_config(const GraphConfig& config) {
  Evaluated e{make_graph(config), {}};
  validate_or_throw(e.graph);
  e.result = evaluate(e.graph);
  return e;
}

std::int64_t max_of(const std::vector<std::int64_t>& values) {
  std::int64_t best = 0;
  for (const auto v : values) best = std::max(best, v);
  return best;
}

void print_per_processor(const Evaluated& e) {
  Table table({"processor", "stage layers", "busy_cycles", "utilization", "peak_memory", "capacity"});
  for (int p = 0; p < e.graph.processor_count(); ++p) {
    std::string layers;
    for (const auto& stage : e.graph.stages) {
      if (stage.processor == p) {
        layers += (layers.empty() ? "" : ",") + fmt::format("{}-{}", stage.first_layer, stage.last_layer);
      }
    }
    table.add_row({e.graph.processors[p].name, layers, std::to_string(e.result.busy_cycles[p]),
                   fmt::format("{:.3f}", e.result.utilization[p]),
                   human_bytes(e.result.peak_memory_bytes[p]),
                   human_bytes(e.graph.processors[p].memory_capacity_bytes)});
  }
  table.print(std::cout);
}

void warn_memory(const Evaluated& e) {
  for (int p = 0; p < e.graph.processor_count(); ++p) {
    if (e.result.peak_memory_bytes[p] > e.graph.processors[p].memory_capacity_bytes) {
      std::cout << fmt::format("warning: P={} {} needs {} at peak, more than its {} capacity\n",
                               e.graph.processor_count(), e.graph.processors[p].name,
                               human_bytes(e.result.peak_memory_bytes[p]),
                               human_bytes(e.graph.processors[p].memory_capacity_bytes));
    }
  }
}

void run(const EvaluateOptions& options) {
  std::vector<Evaluated> runs;
  double baseline_iteration = 0;
  if (!options.graph_file.empty()) {
    Evaluated e{load_graph(options.graph_file), {}};
    validate_or_throw(e.graph);
    e.result = evaluate(e.graph);
    runs.push_back(std::move(e));
  } else {
    const auto counts = parse_procs(options.graph.procs);
    GraphConfig config = options.graph.config;
    for (const int p : counts) {
      config.processors = p;
      runs.push_back(evaluate_config(config));
      if (p == 1) baseline_iteration = runs.back().result.iteration_cycles;
    }
    if (baseline_iteration == 0 && !options.json) {
      config.processors = 1;
      baseline_iteration = evaluate_config(config).result.iteration_cycles;
    }
  }

  if (options.json) {
    if (runs.size() == 1) {
      std::cout << result_to_json(runs[0].graph, runs[0].result, options.task_times).dump(2) << "\n";
    } else {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& e : runs) list.push_back(result_to_json(e.graph, e.result, options.task_times));
      std::cout << list.dump(2) << "\n";
    }
    return;
  }

  const TaskGraph& first = runs.front().graph;
  std::cout << fmt::format("{} · {} · {} · {} microbatches x {} samples · {} minibatches · "
                           "analytic evaluator (no contention)\n",
                           first.model, first.schedule, first.hardware, first.microbatches,
                           first.samples_per_microbatch, first.minibatches);
  Table table({"P", "total_cycles", "total_s", "iteration_cycles", "iteration_s", "speedup",
               "mean_util", "bubble", "peak_memory", "link_bytes"});
  for (const auto& e : runs) {
    const Result& r = e.result;
    std::int64_t link_bytes = 0;
    for (const auto b : r.link_bytes) link_bytes += b;
    table.add_row({std::to_string(e.graph.processor_count()), std::to_string(r.total_cycles),
                   fmt::format("{:.4g}", r.total_s), fmt::format("{:.0f}", r.iteration_cycles),
                   fmt::format("{:.4g}", r.iteration_s),
                   baseline_iteration > 0 ? fmt::format("{:.2f}x", baseline_iteration / r.iteration_cycles) : "-",
                   fmt::format("{:.3f}", r.mean_utilization),
                   fmt::format("{:.1f}%", 100 * r.bubble_fraction),
                   human_bytes(max_of(r.peak_memory_bytes)), human_bytes(link_bytes)});
  }
  table.print(std::cout);
  if (runs.size() == 1 || options.per_processor) {
    for (const auto& e : runs) {
      std::cout << "\nP=" << e.graph.processor_count() << " per processor:\n";
      print_per_processor(e);
    }
  }
  for (const auto& e : runs) warn_memory(e);
  std::cout << "speedup: steady-state iteration time at P=1 over that at P, same schedule\n";
}

}  // namespace

void add_evaluate_command(CLI::App& app) {
  auto options = std::make_shared<EvaluateOptions>();
  auto* command = app.add_subcommand(
      "evaluate",
      "time a schedule with the analytic evaluator (dependencies and processor order, "
      "contention-free transfers): cycles, iteration period, utilization, bubbles, memory");
  add_graph_options(*command, options->graph, "1-9");
  command->add_option("--graph", options->graph_file,
                      "evaluate a task graph file (from `pipetwin schedule`) instead of building one");
  command->add_flag("--json", options->json,
                    "print JSON: one object for one processor count, a list for several");
  command->add_flag("--task-times", options->task_times, "with --json: start and end of every task");
  command->add_flag("--per-processor", options->per_processor,
                    "print each processor's utilization and memory for every processor count");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
