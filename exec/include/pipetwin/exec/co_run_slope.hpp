// How much a layer's time grows while the other processors of a pipeline are busy: measured
// inside one pipeline run, from how the same layer's times vary with each task's overlap. A table
// timed in a pipeline then splits into what the pipeline costs its layers with nothing beside
// them (data crossing cores, each processor's caches) and what co-running adds.
#pragma once

#include <cstdint>
#include <vector>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Per task of `graph`: the share of its time during which the other processors ran tasks, summed
// over them, over (P - 1) times its time (0: alone throughout, 1: every other processor busy
// throughout). 0 for link tasks, tasks of no length and graphs of one processor.
std::vector<double> other_busy_shares(const TaskGraph& graph, const Result& result);

// What `run` (a run of `graph` recorded with record_layer_times) says co-running costs, from its
// layer times after its first `skip_minibatches`: only records of their task's own kind (not a
// fused B's split shares) and no updates (one per minibatch, after a flush).
struct CoRunFit {
  // What a layer's time grows by per unit of its task's share, as a fraction of its time alone:
  // per layer, kind and processor, the least-squares line of its times against its tasks' shares
  // and its slope over its mean time; those averaged, each weighted by how much its shares vary
  // (n times their variance); the slope s whose relative slopes s / (1 + s x_k), x_k each key's
  // mean share, average the same (exact where every key's times are a_k (1 + s x)). Negative
  // where the data says so (the caller decides); NaN where no layer's shares vary, nothing was
  // recorded, or the data would have the layers take no time alone.
  double slope = 0;
  // The mean share of those layer times, each weighted by its seconds: the overlap a table timed
  // in that run holds. NaN where nothing was recorded.
  double share = 0;
};
CoRunFit fit_co_run(const TaskGraph& graph, const TrainingRun& run, std::int32_t skip_minibatches);

}  // namespace pipetwin
