// `layerwise-merge` (Akintoye et al., "Layer-wise Partitioning and Merging for Efficient and
// Scalable Deep Learning", FGCS 2023) -- a reconstruction: the paper's algorithm is not public
// (docs/papers.md §2). What it states: partition layer-wise, merge neighbouring
// partitions where that cuts communication without unbalancing, and run the forward and the
// backward of different minibatches in parallel. Our reading:
//   - start from single layers and merge neighbours down to one partition per processor,
//     choosing, among all partitions whose slowest stage is within `tolerance` (default 5%) of
//     the balanced partition's, the one whose cuts send the fewest bytes (computed exactly by
//     dynamic programming rather than by greedy merging);
//   - run it as asynchronous 1F1B (forwards and backwards of different minibatches in parallel),
//     with weight stashing so every backward uses its forward's weights (the paper claims the
//     accuracy of non-parallel training; stashing is our choice to keep gradients consistent).
#include <cmath>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_layerwise_merge(const ScheduleRequest& request) {
  const Network& net = request.network;
  const double tolerance = request.params.get_double("tolerance", 0.05);
  if (!(tolerance >= 0)) throw Error("layerwise-merge: tolerance must be >= 0");
  StagePlan plan = plan_stages(request, request.processors);  // the balanced partition first
  if (!request.params.has("cuts")) {
    const std::int64_t samples = net.batch / request.microbatches;
    std::vector<std::int64_t> boundary;  // what a cut after each layer sends
    for (const auto& layer : net.layers) boundary.push_back(layer.output_bytes * samples);
    const LayerCosts layers = layer_costs(request);
    const auto bound = static_cast<std::int64_t>(
        std::floor(static_cast<double>(plan.partition.slowest_stage_cost) * (1.0 + tolerance)));
    plan.partition = least_communication_partition(layers.cycles, layers.cut_allowed, boundary,
                                                   request.processors, bound);
  }
  const int stages = request.processors;
  std::vector<std::vector<StageOp>> ops(stages);
  for (int s = 0; s < stages; ++s) {
    ops[s] = streamed_one_f_one_b_order(s, stages - s - 1, request.microbatches, request.minibatches, true);
  }
  return build_pipeline(request, "layerwise-merge", WeightSemantics::stashed, plan, ops);
}

}  // namespace pipetwin
