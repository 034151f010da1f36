// Predicted against measured, per schedule and processor count (validation.hpp).
#include "pipetwin/exec/validation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {
namespace {

std::int64_t max_peak(const Result& r) {
  std::int64_t peak = 0;
  for (const auto bytes : r.peak_memory_bytes) peak = std::max(peak, bytes);
  return peak;
}

struct Measured {
  double predicted_s = 0, measured_s = 0;
  std::int64_t predicted_peak = 0, measured_peak = 0;
};

}  // namespace

nlohmann::ordered_json validation_rows_json(const ValidationReport& report) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    rows.push_back({{"schedule", row.schedule}, {"processors", row.processors}, {"baseline", row.baseline},
                    {"predicted_step_s", row.predicted_step_s}, {"measured_step_s", row.measured_step_s},
                    {"step_error", row.step_error()}, {"predicted_speedup", row.predicted_speedup},
                    {"measured_speedup", row.measured_speedup},
                    {"predicted_peak_memory_bytes", row.predicted_peak_bytes},
                    {"measured_peak_memory_bytes", row.measured_peak_bytes}});
  }
  return rows;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  std::int64_t concordant = 0, discordant = 0, pairs = 0, tied_a = 0, tied_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double product = (a[i] - a[j]) * (b[i] - b[j]);
      ++pairs;
      tied_a += a[i] == a[j];
      tied_b += b[i] == b[j];
      if (product > 0) ++concordant;
      if (product < 0) ++discordant;
    }
  }
  const double denominator = std::sqrt(static_cast<double>(pairs - tied_a) * static_cast<double>(pairs - tied_b));
  if (denominator == 0) return std::numeric_limits<double>::quiet_NaN();  // one ordering is all ties
  return static_cast<double>(concordant - discordant) / denominator;
}

ValidationReport validate(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                          const Predictor& predict, const Runner& run) {
  if (options.schedules.empty()) throw Error("validate: give at least one schedule");
  if (options.processors.empty()) throw Error("validate: give at least one processor count");
  if (options.runs < 1) throw Error("validate: runs must be at least 1");
  const ScheduleRequest request = make_request(config);
  const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, options.training.seed);
  auto build = [&](const std::string& schedule, int processors) {
    GraphConfig c = config;
    c.schedule = schedule;
    c = without_other_schedules_params(c);
    c.processors = processors;
    TaskGraph graph = make_graph(c);
    validate_or_throw(graph);
    return graph;
  };
  auto measure = [&](const std::string& schedule, const TaskGraph& graph) {
    const int processors = graph.processor_count();
    const Result predicted = predict(graph);
    if (options.progress) {
      options.progress(schedule + " on " + std::to_string(processors) + " processor(s): " + std::to_string(options.runs) + " runs");
    }
    std::vector<double> steps_s;
    std::int64_t peak = 0;
    for (int r = 0; r < options.runs; ++r) {
      const TrainingRun measured = run(graph, request.network, sampler, options.training);
      steps_s.push_back(measured.result.iteration_s);
      peak = std::max(peak, max_peak(measured.result));
    }
    return Measured{predicted.iteration_s, median_of(std::move(steps_s)), max_peak(predicted), peak};
  };
  ValidationReport report;
  for (const auto& schedule : options.schedules) {
    // The one-processor baseline: this schedule, or sequential where it cannot be built on one
    // processor. Only building falls back: an error while running (out of memory, divergence)
    // is the user's to see.
    std::string baseline = schedule;
    TaskGraph one_graph;
    try {
      one_graph = build(schedule, 1);
    } catch (const Error&) {
      baseline = "sequential";
      one_graph = build("sequential", 1);
    }
    const Measured one = measure(baseline, one_graph);
    for (const int p : options.processors) {
      const Measured m = (p == 1 && baseline == schedule) ? one : measure(schedule, build(schedule, p));
      report.rows.push_back({schedule, p, baseline, m.predicted_s, m.measured_s, one.predicted_s / m.predicted_s,
                             one.measured_s / m.measured_s, m.predicted_peak, m.measured_peak});
    }
  }
  double total = 0;
  for (const auto& row : report.rows) {
    total += std::abs(row.step_error());
    report.max_abs_step_error = std::max(report.max_abs_step_error, std::abs(row.step_error()));
  }
  report.mean_abs_step_error = total / static_cast<double>(report.rows.size());
  for (const int p : options.processors) {
    std::vector<double> predicted, measured;
    for (const auto& row : report.rows) {
      if (row.processors != p) continue;
      predicted.push_back(row.predicted_step_s);
      measured.push_back(row.measured_step_s);
    }
    report.kendall_tau[p] = kendall_tau(predicted, measured);
  }
  return report;
}

}  // namespace pipetwin
