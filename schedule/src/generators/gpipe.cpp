// `gpipe` (Huang et al. 2019): per minibatch, every stage runs the forwards of all M
// microbatches, then their backwards (in microbatch order, as torch.distributed.pipelining's
// ScheduleGPipe), then one update: a flush per minibatch, one weight version.
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_gpipe(const ScheduleRequest& request) {
  const StagePlan plan = plan_stages(request, request.processors);
  std::vector<std::vector<StageOp>> ops(request.processors);
  for (int s = 0; s < request.processors; ++s) {
    for (int k = 0; k < request.minibatches; ++k) {
      for (int m = 0; m < request.microbatches; ++m) ops[s].push_back({TaskKind::F, s, k, m});
      for (int m = 0; m < request.microbatches; ++m) ops[s].push_back({TaskKind::B, s, k, m});
      ops[s].push_back({TaskKind::U, s, k, -1});
    }
  }
  return build_pipeline(request, "gpipe", WeightSemantics::synchronous, plan, ops);
}

}  // namespace pipetwin
