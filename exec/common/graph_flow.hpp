// What the executor reads off a task graph's declared data flow before a run: which tasks read
// each task's output (reads_output, the IR's rule) and how many dependencies carry each of its
// fields (a field's only reader may take it over instead of copying it), which updates each
// weight gradient is summed into in place, and how many tasks read each stash and each weight
// version (so each is freed after its last reader), and which updates share each all-reduce. Nothing is inferred: every relation comes from a typed dependency or a
// task's declared fields. The graph's declared buffers are not read: the executor holds and
// frees its tensors by these rules, and the conformance test compares the two.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

// (first layer key, minibatch, microbatch): the layer as layer_key() numbers it
using StashKey = std::tuple<std::int32_t, std::int32_t, std::int32_t>;

inline bool is_link_task(const Task& task) { return task.placement == Placement::link; }

struct GraphFlow {
  // Data-parallel replicas (dp=): replica r holds stages [r S, (r + 1) S) and its own copy of
  // every layer, so the registries key a layer l of replica r as r x layers + l.
  std::int32_t replicas = 1;
  std::int32_t stages_per_replica = 1;
  std::int32_t layers = 0;
  std::int32_t replica(const Task& task) const { return task.stage >= 0 ? task.stage / stages_per_replica : 0; }
  std::int32_t layer_key(const Task& task, std::int32_t layer) const { return replica(task) * layers + layer; }
  StashKey stash_key(const Task& task) const { return {layer_key(task, task.first_layer), task.minibatch, task.microbatch}; }

  std::vector<std::int32_t> output_readers;           // per task: dependencies that read its output
  std::map<std::pair<std::int32_t, Carries>, std::int32_t> field_readers;  // (producer, what it carries):
                                                                           // dependencies carrying it
  std::vector<std::int32_t> accumulate_into;          // B / BW: the U on its own processor that takes its
                                                      // weight gradient directly (summed in place), or -1
  std::vector<bool> sends_weight_gradient;            // B / BW: a transfer takes its weight gradient
  std::vector<bool> sends_output_gradients;           // BA: a BW takes the gradients at its layers' outputs
  std::vector<bool> recomputed;                       // F: an RC takes its stash (it keeps only its input)
  std::vector<std::int32_t> stash_transfer;           // B / BA / BW: the transfer (X) it takes its stash
                                                      // from, when its forward ran elsewhere; else -1
  std::vector<bool> stash_without_input;              // X of a stash to a BA part, hop by hop: it moves all
                                                      // of the stash but the forward's input (only a BW reads it)
  std::map<StashKey, std::int32_t> stash_readers;     // backward tasks of each forward's stash
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> version_readers;  // (layer key, version)
  std::vector<std::int32_t> newest_version;           // per layer
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> version_writer;  // (stage, version) -> U
  std::map<std::int32_t, std::vector<std::int32_t>> collective_updates;  // collective -> the updates waiting
                                                                         // for it, in rank order
  // Backwards that read the same activation-gradient slices, made and read on one processor, and
  // are those slices' only readers (LayerPipe: both parts of a BA and the BW of a layer, each
  // reading both parts of the next layer's BA): the first to run assembles the gradient once and
  // the others read it, instead of each assembling a copy of its own. Per task: its group, or -1.
  // (schedule/gradient_assembly.hpp, whose rule the cost model charges by.)
  std::vector<std::int32_t> assembly_group;
  std::vector<std::int32_t> assembly_readers;         // per group: its tasks
  std::vector<bool> assembles;                        // per task: it assembles its output's gradient from a
                                                      // split BA's slices (timed apart: kGradientAssemblyLayer)
};

GraphFlow read_graph_flow(const TaskGraph& graph, std::int32_t layer_count);

// The one dependency of `task` that carries `what` (throws naming the task when there is none,
// or several).
const Dep& the_dep(const TaskGraph& graph, const Task& task, Carries what);

}  // namespace pipetwin::exec
