// The one sweep: schedules x processor counts of one model on one hardware, each configuration
// run by a predicting engine, one row each with the same columns in the CLI (table, CSV, JSON),
// in Python (a DataFrame) and in experiments/. Running the rows in parallel is the front end's
// business (SystemC's kernel is one per process, so both use worker processes); what a row holds
// and what "speedup" means are defined here, once:
//   speedup = replicas x iteration_s of the baseline schedule (default: sequential) at P = 1
//             / iteration_s of the row
// where replicas is the row's data-parallel d (dp=; each replica trains a batch per iteration),
// and the baseline is one replica (dp and its parameters dropped).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

struct SweepRequest {
  GraphConfig base;                  // model, hardware, microbatches, minibatches, params, calibration
  std::vector<std::string> schedules;
  std::vector<int> processors;
  std::string baseline = "sequential";  // empty: no speedup column values
};

// The columns of every row, in order.
const std::vector<std::string>& sweep_columns();

// The configurations to run: every schedule at every count (parameters only other schedules take
// dropped), then the baseline schedule at P = 1 when there is one. Throws on an unknown schedule,
// on no schedules or no counts, on a schedule or count given twice, and on a count outside 1..4096.
std::vector<GraphConfig> sweep_configs(const SweepRequest& request);

// A sweep's processor count as given (Python's ints are any size): itself when 1..4096, else throws.
int checked_sweep_processors(std::int64_t processors);

// Runs one configuration: a row with every column (speedup null), or, when it cannot be built or
// run, the configuration's columns and "error".
nlohmann::ordered_json sweep_row(const std::string& engine, const GraphConfig& config);

// The rows of sweep_configs(request), run, in that order -> the table: the baseline's own run
// removed, speedups filled in. Throws when the baseline failed (naming why).
std::vector<nlohmann::ordered_json> finish_sweep(const SweepRequest& request, std::vector<nlohmann::ordered_json> rows);

}  // namespace pipetwin
