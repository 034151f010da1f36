// Profiling a network on the device --device names (CPU or CUDA) into a calibration table from
// the CLI's options (used by `profile` and by `validate` when it is given no table).
#pragma once
#include "executor_setup.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cli {

// `concurrent`: copies timed at once (CPU only), a table for that many processor threads.
Calibration profile_device_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                       bool progress, int concurrent = 1);

}  // namespace pipetwin::cli
