// Calibration on the CPU: the layer times of a CPU run (pipetwin/exec/profiling.hpp), the copy
// bandwidth its transfers reach and the thread handoff; and the test-set accuracy of trained
// weights.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pipetwin/exec/profiling.hpp"

namespace pipetwin::cpu {

// Seconds of one copy of `bytes` into a new buffer, as the executor's transfers make (median of
// `repeats`), with `concurrent` threads copying at once (the median thread's): a table for P
// processors times its copies as its layers, P at once, sharing caches and memory bandwidth.
// Each thread's copies are read and freed by the next thread, as a transfer's receiver reads
// and frees its data, so a copy lands in memory another core's cache held last (docs/executor.md,
// "Calibration"). Each thread waits for the others as the runs' threads do: spinning for up to
// `spin_s` (TrainingOptions::handoff_spin_s, resolved), then asleep.
double measure_copy_seconds(std::int64_t bytes, int repeats, int concurrent = 1, double spin_s = 0);

// The whole calibration of `config`'s network on the CPU: layer times and task overhead from a
// one-processor sequential run of about `repeats` microbatches (one warm-up minibatch more), then
// copy bandwidth (with `concurrent` copies at once) and latency. `progress` gets a line per phase (may be empty). `concurrent`: copies
// of the run timed at once (Calibration::concurrent), a table for that many processor threads.
// `pin_cpus`: where the copies' threads run, as a pinned run's processors (profile_layers).
// `handoff_spin_s`: the spin of the runs the table is for (TrainingOptions::handoff_spin_s; the
// automatic one is that of runs of `concurrent` processors); the handoff is timed with it
// (Calibration::handoff_spin_s).
Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress, int concurrent = 1,
                        const std::vector<int>& pin_cpus = {}, double handoff_spin_s = kAutomaticHandoffSpin);

struct Accuracy {
  double loss = 0;      // mean over the samples
  double accuracy = 0;  // fraction classified correctly
};
// Batch norm uses each evaluation batch's own statistics (the executor keeps no running means).
Accuracy evaluate_accuracy(const Network& network, const std::vector<HostWeights>& weights, const Dataset& data,
                           std::int64_t batch = 500);

}  // namespace pipetwin::cpu
