// Data and tensor parallelism (docs/design.md, "Data and tensor parallelism"): d replicas of a
// synchronous pipeline whose processors may each be a tensor-parallel group of t GPUs,
// each on processors of its own, every stage's weight gradients all-reduced across the replicas
// (a collective of X tasks over the links) before the stage's update. Ranks are placed as
// Megatron-LM places them: tensor-parallel innermost, then data-parallel, then pipeline.
#pragma once
#include <string>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/params.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// How a configuration's GPUs are used: t x p x d of them, p the pipeline's processors.
struct Parallelism {
  int tensor = 1;                       // t: each processor of the graph is a tensor-parallel group
                                        // of t GPUs in lockstep (tensor_parallel_network)
  bool sequence_parallel = false;       // sp: Megatron's sequence parallelism in the t-groups
  int replicas = 1;                     // d
  std::string algorithm = "ring";       // all-reduce: ring or hierarchical
  bool zero = false;                    // ZeRO-1: optimizer state and update sharded over the replicas
  std::string rank_order = "tp-dp-pp";  // innermost first: replicas of a stage on neighbouring
                                        // ranks (Megatron's default); tp-pp-dp: a pipeline's stages
};

// The parameters the synchronous stage schedules take for it (tp, sp, dp, allreduce, zero, rank_order).
std::vector<ParamSpec> parallel_params();
// What the schedule's parameters ask for; throws on bad values.
Parallelism parallelism(const Params& schedule_params);

// The global rank (processor index) of processor `local` of replica `replica`, with
// `per_replica` processors in each replica.
int data_parallel_rank(const Parallelism& dp, int replica, int local, int per_replica);

// `pipeline` (one replica, processors 0..P-1) replicated dp.replicas times over P x d processors,
// with each stage's gradients all-reduced before its updates. Links follow the hardware's nodes
// and NICs for the ranks each replica lands on. Needs synchronous weights (one update per stage
// and minibatch, after all its microbatches).
TaskGraph replicate_data_parallel(const TaskGraph& pipeline, const HardwareProfile& hw, const Parallelism& dp);

}  // namespace pipetwin
