// `pipefb`, reconstructed (the paper is not public; docs/papers.md §4.3 lists what
// a reimplementation must decide, docs/schedules/pipefb.md what we decided): forwards and
// backwards of a stage run on different processors. P = 2S processors for S stages, on a chain
// F-node 0, ..., F-node S-1, B-node S-1, ..., B-node 0, so the loss turns around between
// neighbours. An F-node runs only its stage's forwards, one microbatch after another; each
// stash goes to host memory (OFF) and comes back to the B-node (ON), prefetched while the
// B-node's previous backward runs. The B-node runs backward and update per microbatch (each
// microbatch is one PipeDream minibatch) and sends the new weights back to the F-node. The
// F-node never waits for the newest weights: stage s's forward of microbatch n reads version
// n - d(s), d(s) = 2(S-1-s) + lag, the updates still in flight round the loop. Backwards read
// their forward's version (the B-node keeps the versions in flight).
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_pipefb(const ScheduleRequest& request) {
  const int P = request.processors;
  // F-nodes: `fnodes` processors run the forwards; the other P - fnodes are B-nodes, one per stage.
  // The default, P/2, pairs each stage's F-node with its B-node; fewer F-nodes (each running the
  // forwards of several consecutive stages) balance the work, since a backward is about twice a
  // forward (docs/schedules/pipefb.md, "Node roles").
  const bool paired = !request.params.has("fnodes");
  if (paired && (P < 2 || P % 2 != 0)) {
    throw Error("pipefb puts each stage's forwards and backwards on two processors: --procs must be even "
                "(got " + std::to_string(P) + "), or give fnodes=");
  }
  const int fnodes = static_cast<int>(request.params.get_int("fnodes", P / 2));
  if (fnodes < 1 || fnodes >= P) {
    throw Error("pipefb: fnodes=" + std::to_string(fnodes) + " but P=" + std::to_string(P) +
                " needs at least one F-node and one B-node (1 <= fnodes <= P - 1)");
  }
  const int stages = P - fnodes;
  if (fnodes > stages) {
    throw Error("pipefb: fnodes=" + std::to_string(fnodes) + " leaves " + std::to_string(stages) +
                " B-nodes (stages); an F-node needs at least one stage's forwards");
  }
  const auto lag = request.params.get_int("lag", 2);
  if (lag < 1) throw Error("pipefb: lag must be at least 1 (the update of the microbatch before cannot be in time)");
  StagePlan plan = plan_stages(request, stages);
  for (int s = 0; s < stages; ++s) {
    plan.stage_processor[s] = P - 1 - s;
    plan.forward_processor.push_back(s * fnodes / stages);  // consecutive stages share an F-node
    plan.weight_delay.push_back(2 * (stages - 1 - s) + static_cast<int>(lag));
  }
  plan.reload_lookahead = 4;  // reload while the previous backward and update run
  std::vector<std::vector<StageOp>> ops(P);
  for (int k = 0; k < request.minibatches; ++k) {
    for (int m = 0; m < request.microbatches; ++m) {
      for (int s = 0; s < stages; ++s) {
        ops[plan.forward_processor[s]].push_back({TaskKind::F, s, k, m});
        ops[P - 1 - s].push_back({TaskKind::B, s, k, m});
        ops[P - 1 - s].push_back({TaskKind::U, s, k, m});
      }
    }
  }
  return build_pipeline(request, "pipefb", WeightSemantics::delayed, plan, ops);
}

}  // namespace pipetwin
