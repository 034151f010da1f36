// `pipetwin run --device cpu|cuda`: trains a network under a schedule on CPU threads or GPUs and
// reports the measured result in the simulator's schema (table or --json), the loss per minibatch, test
// accuracy on request, and a Chrome trace of the measured run beside its prediction.
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "executor_setup.hpp"
#include "graph_options.hpp"
#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/views.hpp"
#include "pipetwin/sim/engines.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

struct RunOptions {
  GraphOptions graph;
  ExecutorOptions executor;
  double epochs = 0;
  const CLI::Option* epochs_given = nullptr;
  bool test = false;
  bool json = false;
  bool quiet = false;
  std::string trace_file;
};

void run(RunOptions& options) {
  check_device(options.executor.device);
  const auto counts = parse_procs(options.graph.procs);
  if (counts.size() != 1) throw Error("run: give one processor count in --procs");
  GraphConfig config = options.graph.config;
  default_hardware_for_device(options.executor, config.hardware);
  config.processors = counts.front();
  const ScheduleRequest request = make_request(config);
  check_executor_network(request.network);
  const auto data = load_data(options.executor, request.network, "train");
  if (options.epochs_given->count() > 0) {
    if (!(options.epochs > 0) || !std::isfinite(options.epochs)) {
      throw Error("--epochs must be a positive number of passes over the data, got " + short_number(options.epochs));
    }
    const double steps = options.epochs * static_cast<double>(data->size()) / static_cast<double>(request.network.batch);
    if (!(steps < 1e6)) {
      throw Error("--epochs " + short_number(options.epochs) + " is " + short_number(steps) +
                  " minibatches of " + std::to_string(request.network.batch) + " samples; at most 1e6");
    }
    config.minibatches = std::max(1, static_cast<int>(steps));
  }
  const TaskGraph graph = make_graph(config);
  validate_or_throw(graph);
  std::unique_ptr<Dataset> test_data;
  if (options.test) test_data = load_data(options.executor, request.network, "test");
  const BatchSampler sampler = graph_sampler(*data, graph, request.network, options.executor.seed);
  TrainingOptions training = training_options(options.executor);
  training.record_memory_timeline = !options.trace_file.empty();
  const int report_every = std::max(1, config.minibatches / 10);
  if (!options.quiet) {
    std::cerr << fmt::format("training {} on {} ({} samples) under {} on {} processor(s) ({}): {} minibatches\n",
                             graph.model, data->name, data->size(), graph.schedule, graph.processor_count(),
                             options.executor.device, config.minibatches);
    training.on_minibatch = [&](std::int32_t done) {
      if (done % report_every == 0 || done == config.minibatches) {
        std::cerr << fmt::format("  minibatch {}/{}\n", done, config.minibatches);
      }
    };
  }
  std::string placement;
  const TrainingRun trained = executor_runner(options.executor, &placement)(graph, request.network, sampler, training);
  cpu::Accuracy accuracy;
  if (test_data) accuracy = cpu::evaluate_accuracy(request.network, trained.final_weights, *test_data);

  if (!options.trace_file.empty()) {  // the measured run over the prediction of the same graph
    EngineOptions predicting;
    predicting.record_memory_timeline = true;
    const Result predicted = run_engine(default_engine(), graph, predicting);
    write_output_file(options.trace_file, chrome_trace_json(graph, {&trained.result, &predicted}));
    std::cerr << "wrote a Chrome trace of the measured run and the " << predicted.engine << " prediction to "
              << options.trace_file << "\n";
  }
  const Result& r = trained.result;
  if (options.json) {
    auto j = result_to_json(graph, r, false);
    j["device"] = options.executor.device;
    j["placement"] = placement;
    j["data"] = data->name;
    j["learning_rate"] = options.executor.learning_rate;
    j["momentum"] = options.executor.momentum;
    j["minibatch_loss"] = trained.minibatch_loss;
    if (test_data) {
      j["test_loss"] = accuracy.loss;
      j["test_accuracy"] = accuracy.accuracy;
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} · {} · {} processors: {} · {} microbatches x {} samples · {} minibatches · measured\n",
                           graph.model, graph.schedule, graph.processor_count(), placement, graph.microbatches,
                           graph.samples_per_microbatch, graph.minibatches);
  Table table({"P", "total_s", "step_s", "mean_util", "bubble", "peak_memory", "host_peak", "first_loss", "last_loss"});
  std::int64_t peak = 0;
  for (const auto bytes : r.peak_memory_bytes) peak = std::max(peak, bytes);
  table.add_row({std::to_string(graph.processor_count()), fmt::format("{:.4g}", r.total_s),
                 fmt::format("{:.4g}", r.iteration_s), fmt::format("{:.3f}", r.mean_utilization),
                 fmt::format("{:.1f}%", 100 * r.bubble_fraction), human_bytes(peak), human_bytes(r.host_peak_memory_bytes),
                 fmt::format("{:.4f}", trained.minibatch_loss.front()), fmt::format("{:.4f}", trained.minibatch_loss.back())});
  table.print(std::cout);
  if (test_data) {
    std::cout << fmt::format("test ({} samples): accuracy {:.2f}%, loss {:.4f}\n", test_data->size(),
                             100 * accuracy.accuracy, accuracy.loss);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  options->graph.config.model = "lenet5";
  options->graph.config.hardware = "cpu-core";
  options->graph.config.microbatches = 4;
  options->graph.config.minibatches = 8;
  auto* command = app.add_subcommand(
      "run", "train a network under a schedule on an executor (CPU threads, or GPUs / SM partitions as processors) and report the measured result");
  add_graph_options(*command, options->graph, "2");
  add_executor_options(*command, options->executor, true);
  command->add_option("--steps", options->graph.config.minibatches, "minibatches to train (same as --minibatches)");
  options->epochs_given =
      command->add_option("--epochs", options->epochs, "train this many passes over the data (sets --minibatches)");
  command->add_flag("--test", options->test, "measure accuracy on the test split after training (Fashion-MNIST)");
  command->add_flag("--json", options->json, "print the measured result as JSON (the simulate --json schema)");
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->add_option("--trace", options->trace_file,
                      "write a Chrome trace (Perfetto) of the measured run, with the prediction of the same graph as "
                      "processes of their own, to compare them on one timeline");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
