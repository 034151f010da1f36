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

// One configuration: its graph, its prediction and its runs.
struct Configuration {
  std::string schedule;
  TaskGraph graph;
  double predicted_s = 0;
  std::int64_t predicted_peak = 0;
  std::vector<double> steps_s;
  std::int64_t measured_peak = 0;
  double measured_s() const { return median_of(steps_s); }
  double spread() const {
    const auto [low, high] = std::minmax_element(steps_s.begin(), steps_s.end());
    return (*high - *low) / 2 / measured_s();
  }
};

}  // namespace

nlohmann::ordered_json validation_rows_json(const ValidationReport& report) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    rows.push_back({{"schedule", row.schedule}, {"processors", row.processors}, {"baseline", row.baseline},
                    {"predicted_step_s", row.predicted_step_s}, {"measured_step_s", row.measured_step_s},
                    {"step_error", row.step_error()}, {"measured_spread", row.measured_spread},
                    {"predicted_speedup", row.predicted_speedup},
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
  // Every configuration: per schedule its one-processor baseline (this schedule, or sequential
  // where it cannot be built on one processor: only building falls back; an error while running,
  // out of memory or divergence, is the user's to see), then each processor count.
  std::vector<Configuration> configurations;
  struct RowPlan {
    std::string schedule, baseline;
    int processors;
    std::size_t one, at;  // indices of the baseline's and the row's configurations
  };
  std::vector<RowPlan> plans;
  for (const auto& schedule : options.schedules) {
    std::string baseline = schedule;
    TaskGraph one_graph;
    try {
      one_graph = build(schedule, 1);
    } catch (const Error&) {
      baseline = "sequential";
      one_graph = build("sequential", 1);
    }
    const std::size_t one = configurations.size();
    configurations.push_back({baseline, std::move(one_graph), 0, 0, {}, 0});
    for (const int p : options.processors) {
      std::size_t at = one;
      if (p != 1 || baseline != schedule) {
        at = configurations.size();
        configurations.push_back({schedule, build(schedule, p), 0, 0, {}, 0});
      }
      plans.push_back({schedule, baseline, p, one, at});
    }
  }
  for (auto& c : configurations) {
    const Result predicted = predict(c.graph);
    c.predicted_s = predicted.iteration_s;
    c.predicted_peak = max_peak(predicted);
  }
  for (int r = 0; r < options.runs; ++r) {
    for (auto& c : configurations) {
      if (options.progress) {
        options.progress("run " + std::to_string(r + 1) + "/" + std::to_string(options.runs) + ": " + c.schedule + " on " +
                         std::to_string(c.graph.processor_count()) + " processor(s)");
      }
      const TrainingRun measured = run(c.graph, request.network, sampler, options.training);
      c.steps_s.push_back(measured.result.iteration_s);
      c.measured_peak = std::max(c.measured_peak, max_peak(measured.result));
    }
  }
  ValidationReport report;
  std::vector<double> spreads;
  for (const auto& plan : plans) {
    const Configuration& one = configurations[plan.one];
    const Configuration& m = configurations[plan.at];
    report.rows.push_back({plan.schedule, plan.processors, plan.baseline, m.predicted_s, m.measured_s(),
                           one.predicted_s / m.predicted_s, one.measured_s() / m.measured_s(), m.predicted_peak,
                           m.measured_peak, m.spread()});
    spreads.push_back(m.spread());
  }
  report.noise_floor = median_of(spreads);
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
