// `pipetwin schedule`: builds a task graph by name and writes it as JSON (or DOT).
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "output_option.hpp"

namespace pipetwin::cli {
namespace {

struct ScheduleOptions {
  GraphOptions graph;
  std::string output;
  std::string torch_csv;
  std::string format = "auto";
};

void run(const ScheduleOptions& options) {
  const auto counts = parse_procs(options.graph.procs);
  if (counts.size() != 1) throw Error("schedule: --procs takes one processor count here");
  GraphConfig config = options.graph.config;
  config.processors = counts.front();
  if (options.output.empty() && options.torch_csv.empty()) {
    throw Error("schedule: give -o graph.json (or .dot) and/or --torch-csv schedule.csv");
  }
  const TaskGraph graph = make_graph(config);
  validate_or_throw(graph);
  if (!options.torch_csv.empty()) {
    write_output_file(options.torch_csv, graph_to_torch_csv(graph));
    if (options.torch_csv != "-") std::cerr << "wrote PyTorch schedule CSV to " << options.torch_csv << "\n";
  }
  if (options.output.empty()) return;
  std::string format = options.format;
  if (format == "auto") {
    format = options.output.size() > 4 && options.output.compare(options.output.size() - 4, 4, ".dot") == 0
                 ? "dot" : "json";
  }
  write_output_file(options.output, format == "dot" ? graph_to_dot(graph) : graph_to_json(graph));
  if (options.output != "-") {
    std::cerr << "wrote " << graph.tasks.size() << " tasks (" << graph.schedule << ", "
              << graph.model << ", P=" << graph.processor_count() << ") to " << options.output << "\n";
  }
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  auto options = std::make_shared<ScheduleOptions>();
  auto* command = app.add_subcommand("schedule", "build a schedule's task graph and write it as JSON or DOT");
  add_graph_options(*command, options->graph, "4", ProcessorCounts::one);
  command->add_option("-o,--output", options->output, "output file (- for standard output)")
      ->check(writable_output_file());
  command->add_option("--torch-csv", options->torch_csv,
                      "also write the schedule as torch.distributed.pipelining's compute-only CSV "
                      "(one step; synchronous schedules)")
      ->check(writable_output_file());
  command->add_option("--format", options->format, "json, dot, or auto (from the file name)")
      ->check(CLI::IsMember({"auto", "json", "dot"}))
      ->capture_default_str();
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
