// `pipedream` (Narayanan et al. 2019): asynchronous 1F1B. Microbatches stream through the
// pipeline without a flush; each stage updates its weights after every backward (each of our
// microbatches is one PipeDream minibatch), and a backward reads the weight version its forward
// read (weight stashing). Stage s of S keeps up to S-s versions alive.
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_pipedream(const ScheduleRequest& request) {
  const StagePlan plan = plan_stages(request, request.processors);
  const int stages = request.processors;
  std::vector<std::vector<StageOp>> ops(stages);
  for (int s = 0; s < stages; ++s) {
    ops[s] = streamed_one_f_one_b_order(s, stages - s - 1, request.microbatches, request.minibatches, true);
  }
  return build_pipeline(request, "pipedream", WeightSemantics::stashed, plan, ops);
}

}  // namespace pipetwin
