// `pipetwin import-schedule --torch-csv f.csv --model M ...`: a schedule that PyTorch generated
// (torch.distributed.pipelining's compute-only CSV), as a pipetwin task graph: timed, and
// written as JSON for `simulate --graph`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "pipetwin/sim/engines.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/models/json_read.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "output_option.hpp"

namespace pipetwin::cli {
namespace {

struct ImportOptions {
  std::string torch_csv;
  GraphConfig config;
  std::string output;
  std::string engine;
};

void run(const ImportOptions& options) {
  // Ranks and microbatches come from the file.
  const TorchSchedule torch = parse_torch_csv(JsonReader::read_text_file(options.torch_csv), options.torch_csv);
  GraphConfig config = options.config;
  config.schedule = "torch-csv";
  config.processors = static_cast<int>(torch.rank_ops.size());
  config.microbatches = torch.microbatches;
  config.params.push_back("schedule.file=" + options.torch_csv);
  const std::string notes = describe_import_notes(torch);
  if (!notes.empty()) std::cerr << "note: " << options.torch_csv << ": " << notes << "\n";
  const Evaluated e = build_and_run(options.engine, config, true);
  std::cout << fmt::format(
      "{}: {} ranks, {} stages, {} microbatches x {} samples, {} minibatches -> {} tasks\n"
      "{} · {}: {} cycles ({:.4g} s), period {:.0f} cycles per minibatch, bubble {:.1f}%\n",
      options.torch_csv, e.graph.processor_count(), e.graph.stages.size(), e.graph.microbatches,
      e.graph.samples_per_microbatch, e.graph.minibatches, e.graph.tasks.size(), e.graph.model,
      options.engine, e.result.total_cycles, e.result.total_s, e.result.iteration_cycles,
      100 * e.result.bubble_fraction);
  if (!options.output.empty()) {
    write_output_file(options.output, graph_to_json(e.graph));
    if (options.output != "-") std::cerr << "wrote the task graph to " << options.output << "\n";
  }
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  auto* command = app.add_subcommand(
      "import-schedule", "import a torch.distributed.pipelining schedule (compute-only CSV) as a task graph");
  command->add_option("--torch-csv", options->torch_csv,
                      "the CSV: one row per rank, actions such as 0F1, 1I0, 1W0, 2B3")
      ->required();
  command->add_option("--model,-m", options->config.model, "network (see `pipetwin models`)")->capture_default_str();
  command->add_option("--hardware", options->config.hardware, "hardware profile")->capture_default_str();
  command->add_option("--minibatches", options->config.minibatches, "steps to repeat the schedule for")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model or hardware (repeatable)")
      ->take_all();
  command->add_option("-o,--output", options->output, "write the task graph JSON here (- for standard output)")
      ->check(writable_output_file());
  options->engine = default_engine();
  command->add_option("--engine", options->engine, "systemc or analytic")->capture_default_str();
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
