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

// The table for a run across processes (CPU): every rank calls it at once and times `concurrent`
// copies, as the ranks of a run with `concurrent` processors each work at once; then ranks 0 and
// 1 time messages between them, and a transfer's latency becomes the message's plus the handoff
// the profile timed, its bandwidth the message's. Rank 0's table is returned (the others' own).
Calibration profile_across_ranks(const GraphConfig& config, const ExecutorOptions& executor, int repeats, bool progress,
                                 int concurrent, RankTransport& transport);

}  // namespace pipetwin::cli
