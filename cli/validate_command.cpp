// `pipetwin validate --device cpu`: predicted (simulator, from a calibration table) against
// measured (the executor) step time, speedup over one processor and peak memory, per schedule and
// processor count, with errors and whether the two rank the schedules alike (Kendall tau).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "engines.hpp"
#include "executor_setup.hpp"
#include "graph_options.hpp"
#include "profile_calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

struct ValidateOptions {
  GraphConfig config;
  ExecutorOptions executor;
  std::string schedules = "sequential,gpipe,1f1b,pipedream";
  std::string procs = "1,2";
  std::string engine;
  int repeats = 16;
  int runs = 5;
  bool json = false;
  bool quiet = false;
};

struct Row {
  std::string schedule;
  int processors = 0;
  std::string baseline;  // the schedule whose one-processor run the speedups divide
  double predicted_step_s = 0, measured_step_s = 0;
  double predicted_speedup = 0, measured_speedup = 0;
  std::int64_t predicted_peak_bytes = 0, measured_peak_bytes = 0;
  double error() const { return (predicted_step_s - measured_step_s) / measured_step_s; }
};

std::int64_t max_peak(const Result& r) {
  std::int64_t peak = 0;
  for (const auto bytes : r.peak_memory_bytes) peak = std::max(peak, bytes);
  return peak;
}

// (concordant - discordant) / pairs over the schedules' step times at one processor count.
double kendall_tau(const std::vector<const Row*>& rows) {
  int concordant = 0, discordant = 0, pairs = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      const double p = rows[i]->predicted_step_s - rows[j]->predicted_step_s;
      const double m = rows[i]->measured_step_s - rows[j]->measured_step_s;
      ++pairs;
      if (p * m > 0) ++concordant;
      if (p * m < 0) ++discordant;
    }
  }
  return pairs == 0 ? 1.0 : static_cast<double>(concordant - discordant) / pairs;
}

void run(ValidateOptions& options) {
  check_device(options.executor.device);
  const std::string engine = options.engine.empty() ? default_engine() : options.engine;
  check_engine(engine);
  const auto counts = parse_procs(options.procs);
  const std::vector<std::string> schedules = parse_schedule_list(options.schedules);
  GraphConfig config = options.config;
  const ScheduleRequest request = make_request(config);
  if (config.calibration_file.empty()) {
    config.calibration = std::make_shared<const Calibration>(
        profile_cpu_calibration(config, options.executor, options.repeats, !options.quiet));
  }
  const auto data = load_data(options.executor, request.network, "train");
  const BatchSampler sampler(*data, request.network.batch, config.microbatches, config.minibatches, options.executor.seed);
  const cpu::TrainingOptions training = training_options(options.executor);

  struct Measured { double predicted_s, measured_s; std::int64_t predicted_peak, measured_peak; };
  auto measure = [&](const std::string& schedule, int processors) {
    GraphConfig c = without_other_schedules_params([&] { GraphConfig x = config; x.schedule = schedule; return x; }());
    c.processors = processors;
    const TaskGraph graph = make_graph(c);
    validate_or_throw(graph);
    const Result predicted = run_engine(engine, graph, false);
    if (!options.quiet) std::cerr << fmt::format("  {} on {} processor(s): {} runs\n", schedule, processors, options.runs);
    std::vector<double> steps_s;
    std::int64_t peak = 0;
    for (int r = 0; r < options.runs; ++r) {
      const cpu::TrainingRun measured = cpu::run_cpu(graph, request.network, sampler, training);
      steps_s.push_back(measured.result.iteration_s);
      peak = std::max(peak, max_peak(measured.result));
    }
    std::sort(steps_s.begin(), steps_s.end());
    return Measured{predicted.iteration_s, steps_s[steps_s.size() / 2], max_peak(predicted), peak};
  };

  std::vector<Row> rows;
  for (const auto& schedule : schedules) {
    // The one-processor baseline: this schedule, or sequential where it needs several processors.
    std::string baseline = schedule;
    Measured one{};
    try {
      one = measure(schedule, 1);
    } catch (const Error&) {
      baseline = "sequential";
      one = measure("sequential", 1);
    }
    for (const int p : counts) {
      const Measured m = (p == 1 && baseline == schedule) ? one : measure(schedule, p);
      Row row{schedule, p, baseline, m.predicted_s, m.measured_s, one.predicted_s / m.predicted_s,
              one.measured_s / m.measured_s, m.predicted_peak, m.measured_peak};
      rows.push_back(row);
    }
  }
  double total_error = 0, worst_error = 0;
  for (const auto& row : rows) {
    total_error += std::abs(row.error());
    worst_error = std::max(worst_error, std::abs(row.error()));
  }
  const double mean_error = total_error / static_cast<double>(rows.size());
  std::map<int, double> tau;
  for (const int p : counts) {
    std::vector<const Row*> at_p;
    for (const auto& row : rows) {
      if (row.processors == p) at_p.push_back(&row);
    }
    tau[p] = kendall_tau(at_p);
  }

  if (options.json) {
    nlohmann::ordered_json j;
    j["model"] = request.network.name;
    j["device"] = options.executor.device;
    j["engine"] = engine;
    j["microbatches"] = config.microbatches;
    j["minibatches"] = config.minibatches;
    j["samples_per_microbatch"] = request.network.batch / config.microbatches;
    j["rows"] = nlohmann::ordered_json::array();
    for (const auto& row : rows) {
      j["rows"].push_back({{"schedule", row.schedule}, {"processors", row.processors}, {"baseline", row.baseline},
                           {"predicted_step_s", row.predicted_step_s}, {"measured_step_s", row.measured_step_s},
                           {"step_error", row.error()}, {"predicted_speedup", row.predicted_speedup},
                           {"measured_speedup", row.measured_speedup},
                           {"predicted_peak_memory_bytes", row.predicted_peak_bytes},
                           {"measured_peak_memory_bytes", row.measured_peak_bytes}});
    }
    j["mean_abs_step_error"] = mean_error;
    j["max_abs_step_error"] = worst_error;
    j["kendall_tau"] = nlohmann::ordered_json::object();
    for (const auto& [p, t] : tau) j["kendall_tau"][std::to_string(p)] = t;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} · {} microbatches x {} samples · {} minibatches · predicted by {} from a calibration, "
                           "measured on {}\n",
                           request.network.name, config.microbatches, request.network.batch / config.microbatches,
                           config.minibatches, engine, options.executor.device);
  Table table({"schedule", "P", "predicted_step_ms", "measured_step_ms", "error", "predicted_speedup",
               "measured_speedup", "predicted_peak", "measured_peak"});
  for (const auto& row : rows) {
    table.add_row({row.schedule, std::to_string(row.processors), fmt::format("{:.3f}", row.predicted_step_s * 1e3),
                   fmt::format("{:.3f}", row.measured_step_s * 1e3), fmt::format("{:+.1f}%", 100 * row.error()),
                   fmt::format("{:.2f}x", row.predicted_speedup), fmt::format("{:.2f}x", row.measured_speedup),
                   human_bytes(row.predicted_peak_bytes), human_bytes(row.measured_peak_bytes)});
  }
  table.print(std::cout);
  std::cout << fmt::format("step-time error: mean {:.1f}%, largest {:.1f}%\n", 100 * mean_error, 100 * worst_error);
  if (schedules.size() > 1) {
    std::string line = "ranking of schedules (Kendall tau, 1 = same order):";
    for (const auto& [p, t] : tau) line += fmt::format(" P={} {:.2f}", p, t);
    std::cout << line << "\n";
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  options->config.model = "lenet5";
  options->config.hardware = "cpu-core";
  options->config.microbatches = 4;
  options->config.minibatches = 16;
  auto* command = app.add_subcommand(
      "validate", "predicted against measured: step time, speedup and peak memory per schedule and processor count");
  command->add_option("--model,-m", options->config.model, "network from `pipetwin models`")->capture_default_str();
  command->add_option("--schedules", options->schedules, "comma-separated schedules")->capture_default_str();
  command->add_option("--procs,-p", options->procs, "processor counts, e.g. 1,2 or 1-4")->capture_default_str();
  command->add_option("--microbatches", options->config.microbatches, "microbatches per minibatch")->capture_default_str();
  command->add_option("--steps,--minibatches", options->config.minibatches, "minibatches per run")->capture_default_str();
  command->add_option("--hardware", options->config.hardware, "hardware profile the calibration is attached to")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model or schedules, e.g. batch=64")->take_all();
  command->add_option("--calibration", options->config.calibration_file,
                      "calibration table from `pipetwin profile` (default: profile first)")
      ->check(CLI::ExistingFile);
  command->add_option("--engine", options->engine, "predicting engine: systemc (default when built) or analytic");
  add_executor_options(*command, options->executor, true);
  command->add_option("--repeats", options->repeats, "profiling: timings per task kind and layer")->capture_default_str();
  command->add_option("--runs", options->runs, "measured runs per configuration (the median step time is kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  command->add_flag("--json", options->json, "print the table as JSON");
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
