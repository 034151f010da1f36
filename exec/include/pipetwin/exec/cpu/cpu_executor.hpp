// The CPU executor (docs/executor.md): runs any task graph with real training numerics, one thread per
// processor and one per link (the core it shares with the CUDA executor is
// exec/common/graph_execution.hpp). Layers run in Eigen (fp32); every weight version the schedule
// declares is kept until its last reader; transfers are copies between per-processor buffers;
// offload and reload go through host buffers; updates are SGD (momentum optional). It reports a
// measured Result with the simulator's schema (engine "cpu"), with the memory it really held.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::cpu {

struct TrainingOptions {
  double learning_rate = 0.05;
  double momentum = 0.0;              // SGD momentum; 0 = plain SGD
  std::uint64_t seed = 1;             // initial weights
  bool record_memory_timeline = false;
  bool record_layer_times = false;    // time every layer's part of every task (for calibration)
  // Called from worker threads after each minibatch's loss is complete (minibatches done so far).
  std::function<void(std::int32_t)> on_minibatch;
  // Told every task's start and end and every allocation and free, as they happen.
  std::vector<EngineObserver*> observers;
};

// One layer's part of one task: F, BA or BW work of that layer, or its share of an update.
struct LayerTime {
  std::int32_t task = 0;
  std::int32_t layer = 0;
  TaskKind kind = TaskKind::F;
  double seconds = 0;
};

struct TrainingRun {
  Result result;                          // measured: task times, utilization, memory, links
  std::vector<double> minibatch_loss;     // mean loss over each minibatch's samples
  std::vector<Vector> final_weights;      // per layer: the newest version
  std::vector<Vector> initial_weights;    // per layer: version 0
  std::vector<LayerTime> layer_times;     // when recorded
};

// Initial parameters of every layer, from `seed` (the same as the executor's version 0).
std::vector<Vector> initial_weights(const Network& network, std::uint64_t seed);

// Throws pipetwin::Error when `graph`, `network` and `data` do not go together (another model,
// another microbatch size, samples or classes that do not fit) or when a layer is one the
// executors cannot run. Every executor checks this first.
void check_run_inputs(const TaskGraph& graph, const Network& network, const BatchSampler& data);

// Runs `graph` (built for `network`) on `data`. Throws pipetwin::Error, after every thread has
// stopped, on: a layer the executor cannot run, memory beyond a processor's capacity (checked
// on the schedule's declared memory before starting, and on what is really allocated while
// running), and a loss that is not finite (divergence).
TrainingRun run_cpu(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                    const TrainingOptions& options);

// An executor as profiling and validation take it: run_cpu, or the CUDA executor bound to its
// placement.
using Runner = std::function<TrainingRun(const TaskGraph&, const Network&, const BatchSampler&, const TrainingOptions&)>;

}  // namespace pipetwin::cpu
