// How far apart, in bytes, each processor writes a forward's stash and reads it back (the stash
// reuse distance): per processor, the bytes its tasks pass through between the forward that
// stashes a layer's microbatch and each backward task (B, BA or BW) that reads that stash on the
// same processor, weighted by the stash's bytes, over the minibatches after the first. A forward
// (or a recomputation) passes its layers' inputs, outputs and stashes; a backward their stashes,
// input gradients and output gradients (fp32, the layers' per-sample sizes times a task's
// samples). Stashes read on another processor than the one that wrote them (LayerPipe's parts)
// are counted apart.
//
// On the 2-vCPU machine of 2026-11-30, resnet8's processors whose distance stayed under about 20
// MiB ran their layers faster than those far over it (docs/executor.md, "Where gpipe's time at
// P = 2 goes"); validate prices a row's layers by it (exec's stash term, Calibration's
// far_stash_distance_bytes). experiments/stash_reuse_distance.py prints it per schedule.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct StashReuse {
  // The stash-weighted mean distance, in bytes; -1 where the processor read back no stash of its
  // own after the first minibatch.
  double distance_bytes = -1;
  std::int64_t read_back_bytes = 0;  // the stash bytes it read back that it wrote (the weights)
  std::int64_t remote_bytes = 0;     // the stash bytes it read that another processor wrote
};

// Per processor of `graph` (by index, 0 to the largest processor a task runs on). Throws for a
// task whose layers `network` lacks.
std::vector<StashReuse> stash_reuse(const TaskGraph& graph, const Network& network);

// Per processor of `graph` (by index, 0 to the largest processor a forward runs on): the layers
// its forwards run, first to last, as the first minibatch's first microbatch lays them out (the
// layers whose stashes it holds; what a table timed in that graph timed on it).
std::vector<std::vector<std::int32_t>> forward_layers_by_processor(const TaskGraph& graph);

}  // namespace pipetwin
