// `pipetwin show`: an ASCII space-time diagram of a schedule, like the seed papers' figures.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "pipetwin/sim/engines.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/views.hpp"

namespace pipetwin::cli {
namespace {

struct ShowOptions {
  GraphOptions graph;
  std::string engine;
  int width = 100;
};

void run(const ShowOptions& options) {
  const auto counts = parse_procs(options.graph.procs);
  if (counts.size() != 1) throw Error("show: --procs takes one processor count");
  if (options.width < 10) throw Error("show: --width must be at least 10");
  GraphConfig config = options.graph.config;
  config.processors = counts.front();
  const Evaluated e = build_and_run(options.engine, config, true);
  std::cout << fmt::format("{} · {} · {} · P={} · {} microbatches · {} minibatches · {}\n", e.graph.model,
                           e.graph.schedule, e.graph.hardware, e.graph.processor_count(),
                           e.graph.microbatches, e.graph.minibatches, options.engine);
  std::cout << space_time_diagram(e.graph, e.result, options.width);
  std::cout << fmt::format("bubble {:.1f}%, steady-state period {:.0f} cycles per minibatch\n",
                           100 * e.result.bubble_fraction, e.result.iteration_cycles);
}

}  // namespace

void add_show_command(CLI::App& app) {
  auto options = std::make_shared<ShowOptions>();
  auto* command = app.add_subcommand("show", "draw a schedule as an ASCII space-time diagram (for small P and M)");
  options->graph.config.model = "resnet20";
  options->graph.config.hardware = "unit";
  options->graph.config.microbatches = 4;
  options->graph.config.minibatches = 1;
  options->graph.config.params = {};
  add_graph_options(*command, options->graph, "4", ProcessorCounts::one);
  options->engine = default_engine();
  command->add_option("--engine", options->engine, "systemc or analytic")->capture_default_str();
  command->add_option("--width", options->width, "columns of time at most")->capture_default_str();
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
