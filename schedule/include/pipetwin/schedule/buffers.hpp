// The buffers of a generated graph, declared from its typed data flow (docs/design.md, "Memory"),
// by the same rules the executors follow when they hold real tensors:
//   weights       every version of a stage at its home: the initial one from before the run, each
//                 later one from the start of the update that writes it; freed after the last task
//                 that reads it, except the newest, which is held to the end;
//   gradient-sum  an update's weight gradients summed in place: from the start of the first
//                 weight-gradient task on the update's processor, freed after the update;
//   stash         a forward's activations (or its recomputation's), freed after the last backward
//                 of the same layers and microbatch; an offload and a reload move it (one buffer
//                 per place it is held). Under full recomputation a forward drops its stash when
//                 it ends and its RC makes all of it again; under selective recomputation the
//                 forward keeps all but its layers' selective part, which its RC makes again;
//                 under block recomputation the forward keeps all but its transformer blocks'
//                 stashes less their inputs, which its RC makes again;
//   kept-input    a fully recomputed forward's input, freed after its recomputation;
//   output        what a task hands on (reads_output), freed after the last task that reads it.
// The optimizer's state (network.optimizer: momentum, Adam's moments, fp32 master weights and
// gradients) is each processor's static_bytes: its stages' parameters times the state per
// parameter, held for the whole run.
#pragma once
#include <cstdint>

#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Whether dependency `d` of `consumer` reads its producer's output buffer (an activation,
// gradients, a transfer's copy), rather than a stash, a weight version, a gradient sum or nothing.
bool reads_output(const Task& producer, const Task& consumer, const Dep& d);

// none; full (the whole stage again from its input); selective (attention cores); blocks
// (Megatron-LM's full recomputation: transformer blocks again from their inputs, other layers kept).
enum class RecomputeMode { none, full, selective, blocks };

// Per sample, the part of layers [first, last]'s stash that a forward drops and its RC makes
// again under selective or block recomputation (0 under the other modes: full recomputation
// drops the whole stash but its input).
std::int64_t recomputed_stash_bytes(const Network& network, int first_layer, int last_layer, RecomputeMode mode);

// The graph's buffers from its tasks, dependencies, weight versions and the network's sizes
// (stash, selective and input bytes per sample, parameter bytes) under the graph's recomputation
// mode; replaces graph.buffers.
void declare_buffers(TaskGraph& graph, const Network& network, RecomputeMode recompute = RecomputeMode::none);

}  // namespace pipetwin
