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

using pipetwin::ConcurrentTiming;  // how a table for P >= 2 processors times its layers (profiling.hpp)
using pipetwin::parse_concurrent_timing;

// The whole calibration of `config`'s network on the CPU: layer times and task overhead from a
// one-processor sequential run of about `repeats` microbatches (after as many of warm-up), then
// copy bandwidth (with `concurrent` copies at once) and latency. `progress` gets a line per phase
// (may be empty). `concurrent`: a table for that many processor threads (Calibration::concurrent),
// its layers timed as `timing` says; a network that cannot be cut into that many stages is timed
// as copies. `pin_cpus`: where the threads run, as a pinned run's processors (profile_layers).
// `handoff_spin_s` and `transfer_threads`: those of the runs the table is for
// (TrainingOptions::handoff_spin_s, the automatic one being that of runs of `concurrent`
// processors, and TrainingOptions::transfer_threads); the pipeline runs with them, and the
// handoff is timed with that spin (Calibration::handoff_spin_s). `unmarked_twins`: the tasks'
// overheads from unmarked twins of the timed runs (with_unmarked_twins, profiling.hpp).
Calibration profile_cpu(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                        const std::function<void(const std::string&)>& progress, int concurrent = 1,
                        const std::vector<int>& pin_cpus = {}, double handoff_spin_s = kAutomaticHandoffSpin,
                        ConcurrentTiming timing = ConcurrentTiming::pipeline,
                        TransferThreads transfer_threads = TransferThreads::automatic, bool unmarked_twins = false);

struct Accuracy {
  double loss = 0;      // mean over the samples
  double accuracy = 0;  // fraction classified correctly
};
// Batch norm uses each evaluation batch's own statistics (the executor keeps no running means).
Accuracy evaluate_accuracy(const Network& network, const std::vector<HostWeights>& weights, const Dataset& data,
                           std::int64_t batch = 500);

}  // namespace pipetwin::cpu
