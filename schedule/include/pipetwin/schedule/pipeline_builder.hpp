// Builds the task graph of a stage pipeline from each processor's sequence of operations: the
// shared machinery of sequential, gpipe, 1f1b and pipedream (and of later stage schedules).
// It creates the F, B and U tasks, the X transfers between stages on different processors, the
// dependencies, the weight versions each task reads (per the schedule's semantics) and the
// memory effects (activations stashed by F until B; extra weight versions kept alive).
#pragma once
#include <vector>

#include "pipetwin/schedule/partitioner.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

// One step in a processor's sequence.
struct StageOp {
  TaskKind kind;       // F, B (or BA and BW, the two halves of a backward), or U
  int stage;
  int minibatch;
  int microbatch;      // for U: the microbatch whose backward triggers it (stashed / stale
                       // schedules), or -1 for one update per minibatch (synchronous)
};

// Stages of the request: `cuts=` fixes them, otherwise the balanced partition over
// `stage_count` stages of per-layer F+B cycles. Stage s runs on processor stage_processor[s].
struct StagePlan {
  Partition partition;
  std::vector<int> stage_processor;   // home: weights, backwards, updates
  std::vector<int> forward_processor; // where forwards run, per stage; empty: at home (PipeFB
                                      // moves activations through host memory, weights back)
  std::vector<int> weight_delay;      // delayed semantics: per stage, updates a forward lags
  int reload_lookahead = 2;           // offload: a reload starts when the task this many places
                                      // before its backward (on the backward's processor) ends
};

StagePlan plan_stages(const ScheduleRequest& request, int stage_count);

// What partitioners weigh, per layer: its F+B cycles for one microbatch, and whether a stage may
// end after it (not inside a residual block).
struct LayerCosts {
  std::vector<std::int64_t> cycles;
  std::vector<bool> cut_allowed;
};
LayerCosts layer_costs(const ScheduleRequest& request);

// A graph with the request's description and processors, no stages, links or tasks yet.
TaskGraph empty_graph(const ScheduleRequest& request, const std::string& schedule_name,
                      WeightSemantics semantics);

// The pipeline with the given per-processor sequences; checks every F/B pair appears once.
TaskGraph build_pipeline(const ScheduleRequest& request, const std::string& schedule_name,
                         WeightSemantics semantics, const StagePlan& plan,
                         const std::vector<std::vector<StageOp>>& processor_ops);

}  // namespace pipetwin
