// Profiling a network on the device --device names (CPU or CUDA) into a calibration table from
// the CLI's options (used by `profile` and by `validate` when it is given no table).
#pragma once
#include "executor_setup.hpp"
#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cli {

// `concurrent`: a table for that many processors (CPU: threads; cuda: SM partitions, timed as
// copies at once); `timing` says how a CPU table for 2 or more times its layers (profile_cpu).
Calibration profile_device_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                       bool progress, int concurrent = 1,
                                       cpu::ConcurrentTiming timing = cpu::ConcurrentTiming::copies);

// The table for a run across processes (CPU): every rank calls it at once and times `concurrent`
// copies, as the ranks of a run with `concurrent` processors each work at once; then ranks 0 and
// 1 time messages between them, and a transfer's latency becomes the message's plus the handoff
// the profile timed, its bandwidth the message's. Rank 0's table is returned (the others' own).
// Throws when a rank waits `wait_s` seconds (--message-timeout) for another at the profile's
// start, or for the other's messages: that rank stopped or hangs.
Calibration profile_across_ranks(const GraphConfig& config, const ExecutorOptions& executor, int repeats, bool progress,
                                 int concurrent, RankTransport& transport, double wait_s);

}  // namespace pipetwin::cli
