// `pipedream-2bw` (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training", ICML 2021):
// 1F1B without a flush, as pipedream, but gradients accumulate over a minibatch's M microbatches
// and each stage updates once per minibatch, after its backward of the last microbatch. Weights
// are double-buffered: the forwards of minibatch k use version k-1 even when version k already
// exists, and a backward uses its forward's version, so at most two versions live per stage
// (the update delay is one minibatch). Needs M >= P so version k-1 exists when minibatch k starts.
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_pipedream_2bw(const ScheduleRequest& request) {
  const int stages = request.processors, M = request.microbatches;
  if (M < stages) {
    throw Error("pipedream-2bw: needs at least as many microbatches (" + std::to_string(M) +
                ") as processors (" + std::to_string(stages) + ")");
  }
  const StagePlan plan = plan_stages(request, stages);
  std::vector<std::vector<StageOp>> ops(stages);
  for (int s = 0; s < stages; ++s) {
    for (const StageOp& op : streamed_one_f_one_b_order(s, stages - s - 1, M, request.minibatches, false)) {
      ops[s].push_back(op);
      if (op.kind == TaskKind::B && op.microbatch == M - 1) ops[s].push_back({TaskKind::U, s, op.minibatch, -1});
    }
  }
  return build_pipeline(request, "pipedream-2bw", WeightSemantics::double_buffered, plan, ops);
}

}  // namespace pipetwin
