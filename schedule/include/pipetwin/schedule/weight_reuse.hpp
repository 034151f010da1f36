// Whether a task finds its layers' weights still in its core's cache: a reuse-distance model of the
// weights W and weight-gradient sums dW each processor's tasks touch, in the order the processor
// runs them. The calibration table times every layer in one order (a one-processor sequential
// run, or the pipeline it was timed in), so it holds what a layer costs with its weights as warm
// as that order leaves them. Other orders leave them warmer or colder: on the 2-vCPU AVX-512
// machine (2 MiB of L2 a core) one-processor gpipe ran mlp's steps 6.4% under sequential's, its
// forwards finding their weights where the previous forward left them, while sequential's follow a
// backward that wrote every dW (docs/executor.md, "Weights that stay in the cache").
//
// The model: each processor's tasks, in order, layer by layer (a forward first to last, a backward
// last to first), touch their layers' blocks, each weight version a block of its own: a forward
// reads the version it reads; a B or BW adds into the layer's gradient sum (the sum's first B or
// BW writes it, reading nothing, as does one whose update runs on another processor: it writes a
// gradient of its own to send), then a B or BA reads the version for its input gradient (not at the network's first layer, whose input gradient
// nothing needs); an update reads the sum and the old version at once and writes the new version
// over the sum. Their activations, gradients and stashes count as data touched once. A block's
// working set at a touch is the bytes of the distinct blocks and activations touched since its
// previous touch on that processor, its own included (an LRU stack distance), and the block's
// extra seconds are Calibration::reuse_extra_s of that working set times its bytes; a sum written
// without being read costs none (the curve is a re-read's).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Which block a touch is of, and in which phase (an update's: its sum or the version it reads).
enum class WeightBlock { forward_weights, backward_weights, backward_gradient, update };

// One touch of a layer's weights or gradient sum by a processor task.
struct WeightTouch {
  std::int32_t task = 0;
  std::int32_t layer = 0;
  WeightBlock block = WeightBlock::forward_weights;
  std::int64_t bytes = 0;
  // The distinct bytes touched on the task's processor since this block's previous touch there,
  // its own included; -1 for its first touch in the graph.
  std::int64_t working_set_bytes = -1;
  // A backward's gradient sum that it writes rather than adds into (the sum's first backward, or
  // one whose update runs on another processor): it reads nothing, so it is priced at nothing and
  // left out of the table's means; it still moves the block to the top of the stack.
  bool written = false;
};

// Every touch of a weight block by a processor task of `graph`, in each processor's order (a
// layer without parameters touches none). Throws for a task whose layers `network` lacks.
std::vector<WeightTouch> weight_touches(const TaskGraph& graph, const Network& network);

// Per layer (by index): the mean extra seconds the touches of each block kind cost in `graph`,
// counting tasks of minibatch >= `skip_minibatches` only (the steady state a table is timed in);
// -1 where there were none.
struct LayerReuseSeconds {
  double forward_weights_s = -1;
  double backward_weights_s = -1;
  double backward_gradient_s = -1;
  double update_s = -1;  // per touch: an update makes two, its sum and its old version
};
std::vector<LayerReuseSeconds> mean_reuse_seconds(const TaskGraph& graph, const Network& network,
                                                  const Calibration& calibration, std::int32_t skip_minibatches);

// Writes mean_reuse_seconds of the graph a table was timed in into the table's layers
// (LayerTimes::forward_weights_reuse_s and the others). Nothing without a reuse curve.
void record_weight_reuse(Calibration& calibration, const TaskGraph& timed_graph, const Network& network,
                         std::int32_t skip_minibatches);

// Per task of `graph`: the seconds its weight touches cost beyond what the table's timed run
// charged the same layers' touches (LayerTimes::*_reuse_s); 0 for tasks without touches and
// layers the table has no figure for.
std::vector<double> weight_reuse_charge_s(const TaskGraph& graph, const Network& network, const Calibration& calibration);

// weight_reuse_charge_s summed over the tasks of `graph` that `counted` takes, from minibatch
// `from_minibatch` on, per minibatch from there; 0 where the graph has no minibatch from there.
double weight_reuse_charge_per_minibatch_s(const TaskGraph& graph, const Network& network, const Calibration& calibration,
                                           std::int32_t from_minibatch, const std::function<bool(const Task&)>& counted);

// Adds weight_reuse_charge_s to each task's cost (never below 0). Nothing without a calibration
// that has a reuse curve.
void charge_weight_reuse(TaskGraph& graph, const HardwareProfile& hardware, const Network& network);

}  // namespace pipetwin
