// The CPU executor (docs/executor.md): runs any task graph with real training numerics, one thread per
// processor and one per link (the core it shares with the CUDA executor is
// exec/common/graph_execution.hpp). Layers run in Eigen (fp32); every weight version the schedule
// declares is kept until its last reader; transfers are copies between per-processor buffers;
// offload and reload go through host buffers; updates are SGD (momentum optional). It reports a
// measured Result with the simulator's schema (engine "cpu"), with the memory it really held.
#pragma once
#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/training.hpp"

namespace pipetwin::cpu {

// What TrainingOptions::transfer_threads `asked` comes to for `graph` on this machine: automatic
// is senders where the graph has a processor for every CPU this process may run on, else links.
TransferThreads transfer_threads_for(const TaskGraph& graph, TransferThreads asked);

// The seconds a run_cpu of `graph` with `options` spins for a task's inputs (handoff_spin_for):
// the automatic spin is 0 across ranks and where a transfer runs on a link's thread of its own.
double handoff_spin_of_run(const TaskGraph& graph, const TrainingOptions& options);

// Runs `graph` (built for `network`) on `data`. Throws pipetwin::Error, after every thread has
// stopped, on: a layer the executor cannot run, memory beyond a processor's capacity (checked
// on the schedule's declared memory before starting, and on what is really allocated while
// running), and a loss that is not finite (divergence).
TrainingRun run_cpu(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                    const TrainingOptions& options);

}  // namespace pipetwin::cpu
