// `stale-weights` (Zhang & Abdelrahman, "Pipelined Training with Stale Weights in Deep
// Convolutional Neural Networks", 2021), as reconstructed in docs/papers.md §3.3:
// pipeline registers after the layers a PPV lists (`ppv=19` for resnet56: after layer 19,
// counting layers from 1 as the paper does) cut the network into K+1 partitions, one per
// processor; the forward and the backward of a partition are separate pipeline stages
// (2(K+1) stages in all), so partition s of S keeps 2(S-s) minibatches in flight: 2(S-s)-1
// warm-up forwards, then one forward and one backward alternately. Every backward updates its
// partition's weights at once, and nothing is stashed: forwards and backwards read the newest
// weights, so partition s's forwards lag plain SGD by 2(S-s)-1 updates (3 and 1 on 2 GPUs).
// `hybrid=f` pipelines the first fraction f of the minibatches and trains the rest
// nonpipelined (one minibatch in flight). Each of our microbatches is one of the paper's
// minibatches (use --microbatches 1 to update once per `batch` samples). Without `ppv`, the
// registers go where the balanced partition for P processors puts them. `stash=true` keeps the
// pipeline and stashes weights as PipeDream does (the paper's memory comparison).
#include <cmath>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_stale_weights(const ScheduleRequest& request) {
  const Network& net = request.network;
  StagePlan plan;
  if (request.params.has("ppv")) {
    const auto ppv = request.params.get_int_list("ppv", {});
    if (static_cast<int>(ppv.size()) + 1 != request.processors) {
      throw Error("stale-weights: ppv=" + request.params.get_string("ppv", "") + " makes " +
                  std::to_string(ppv.size() + 1) + " partitions, one per processor; set --procs " +
                  std::to_string(ppv.size() + 1));
    }
    std::string cuts;
    for (const auto layer : ppv) {
      if (layer < 1 || layer >= static_cast<std::int64_t>(net.size())) {
        throw Error("stale-weights: ppv entry " + std::to_string(layer) + " is not between layer 1 and layer " +
                    std::to_string(net.size() - 1) + " of " + net.name + " (a register after the last layer "
                    "would cut nothing)");
      }
      cuts += (cuts.empty() ? "" : ",") + std::to_string(layer - 1);  // after layer `layer`, from 1
    }
    ScheduleRequest with_cuts = request;
    with_cuts.params.set("cuts", cuts);
    plan = plan_stages(with_cuts, request.processors);
  } else {
    plan = plan_stages(request, request.processors);
  }
  const double hybrid = request.params.get_double("hybrid", 1.0);
  if (!(hybrid >= 0 && hybrid <= 1)) throw Error("stale-weights: hybrid must be between 0 and 1");
  const int stages = request.processors, M = request.microbatches;
  const int pipelined = static_cast<int>(std::lround(hybrid * request.minibatches)) * M;
  const int stream = request.minibatches * M;
  std::vector<std::vector<StageOp>> ops(stages);
  for (int s = 0; s < stages; ++s) {
    ops[s] = one_f_one_b_order(s, 2 * (stages - s) - 1, 0, pipelined, true);
    for (int n = pipelined; n < stream; ++n) {  // nonpipelined: one minibatch in flight
      ops[s].push_back({TaskKind::F, s, 0, n});
      ops[s].push_back({TaskKind::B, s, 0, n});
      ops[s].push_back({TaskKind::U, s, 0, n});
    }
    number_stream(ops[s], M);
  }
  // stash=true: the same pipeline with PipeDream's weight stashing (each backward reads the version
  // its forward read, kept until then): the comparison the paper's memory table draws.
  const bool stash = request.params.get_bool("stash", false);
  return build_pipeline(request, "stale-weights", stash ? WeightSemantics::stashed : WeightSemantics::stale, plan, ops);
}

}  // namespace pipetwin
