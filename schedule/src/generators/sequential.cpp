// `sequential`: plain SGD. One processor, or the layers split over P processors with a single
// microbatch in flight: each processor runs F then B of a microbatch, the next microbatch starts
// when the previous one's backward has finished, and the gradients of the minibatch's
// microbatches accumulate into one update per stage.
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_sequential(const ScheduleRequest& request) {
  const StagePlan plan = plan_stages(request, request.processors);
  std::vector<std::vector<StageOp>> ops(request.processors);
  for (int s = 0; s < request.processors; ++s) {
    for (int k = 0; k < request.minibatches; ++k) {
      for (int m = 0; m < request.microbatches; ++m) {
        ops[s].push_back({TaskKind::F, s, k, m});
        ops[s].push_back({TaskKind::B, s, k, m});
      }
      ops[s].push_back({TaskKind::U, s, k, -1});
    }
  }
  return build_pipeline(request, "sequential", WeightSemantics::synchronous, plan, ops);
}

}  // namespace pipetwin
