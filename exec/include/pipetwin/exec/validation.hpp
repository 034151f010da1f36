// Predicted against measured (docs/design.md, "Executors"): for each schedule and processor count, a prediction
// by an engine the caller passes (the simulator or the evaluator, so exec/ needs no SystemC) and
// an executor's measured run (CPU or CUDA); step time, speedup over one processor, peak memory,
// errors, and whether the two rank the schedules alike (Kendall tau). Used by `pipetwin validate`
// and by Python's pipetwin.validate.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

struct ValidationRow {
  std::string schedule;
  int processors = 0;
  std::string baseline;  // the schedule whose one-processor run the speedups divide
  double predicted_step_s = 0, measured_step_s = 0;
  double predicted_speedup = 0, measured_speedup = 0;
  std::int64_t predicted_peak_bytes = 0, measured_peak_bytes = 0;
  // The noise of the measurement: half the range of the runs' step times over their median. An
  // error within it cannot be told from noise.
  double measured_spread = 0;
  double step_error() const { return (predicted_step_s - measured_step_s) / measured_step_s; }
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double mean_abs_step_error = 0, max_abs_step_error = 0;
  std::map<int, double> kendall_tau;  // per processor count, over the schedules
  double noise_floor = 0;  // the median of the rows' measured_spread
};

struct ValidationOptions {
  std::vector<std::string> schedules;
  std::vector<int> processors;
  // Measured runs per configuration; the median step is kept. The runs go round the
  // configurations (run 1 of each, then run 2 of each, ...), so that a machine whose speed drifts
  // slows every configuration alike.
  int runs = 5;
  TrainingOptions training;
  std::function<void(const std::string&)> progress;  // a line per configuration, or empty
};

using Predictor = std::function<Result(const TaskGraph&)>;

// `config` names the model and its parameters, microbatches, minibatches and the calibration;
// its schedule and processors are replaced by each configuration's. `run` measures (run_cpu, or
// the CUDA executor).
ValidationReport validate(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                          const Predictor& predict, const Runner& run);
// The rows as JSON objects, one per configuration (`pipetwin validate --json` and Python's
// pipetwin.validate): schedule, processors, baseline, predicted/measured step time, step error,
// the measurement's spread, speedups and peak memory.
nlohmann::ordered_json validation_rows_json(const ValidationReport& report);

// Kendall's tau-b of two orderings of the same items: (concordant - discordant) /
// sqrt((pairs - pairs tied in a) (pairs - pairs tied in b)); NaN when either is all ties (say, one
// schedule, or every schedule equal at P = 1), where no ordering can agree or disagree.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace pipetwin
