// `1f1b` (PipeDream-Flush, DAPPLE): per minibatch, stage s of S runs min(S-s-1, M) warm-up
// forwards, then alternates one forward and one backward, then the remaining backwards, then one
// update. Synchronous, one weight version; at most min(S-s, M) microbatches' activations live.
#include "pipetwin/schedule/generators.hpp"

#include <algorithm>

namespace pipetwin {

std::vector<StageOp> one_f_one_b_order(int stage, int warmup_forwards, int minibatch, int microbatches,
                                       bool update_after_each_backward) {
  std::vector<StageOp> ops;
  const int warmup = std::min(warmup_forwards, microbatches);
  auto backward = [&](int m) {
    ops.push_back({TaskKind::B, stage, minibatch, m});
    if (update_after_each_backward) ops.push_back({TaskKind::U, stage, minibatch, m});
  };
  for (int m = 0; m < warmup; ++m) ops.push_back({TaskKind::F, stage, minibatch, m});
  for (int i = 0; i < microbatches - warmup; ++i) {
    ops.push_back({TaskKind::F, stage, minibatch, warmup + i});
    backward(i);
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) backward(m);
  return ops;
}

void number_stream(std::vector<StageOp>& ops, int microbatches) {
  for (auto& op : ops) {
    op.minibatch = op.microbatch / microbatches;
    op.microbatch = op.microbatch % microbatches;
  }
}

std::vector<StageOp> streamed_one_f_one_b_order(int stage, int warmup, int microbatches, int minibatches,
                                                bool update_after_each_backward) {
  auto ops = one_f_one_b_order(stage, warmup, 0, microbatches * minibatches, update_after_each_backward);
  number_stream(ops, microbatches);
  return ops;
}

TaskGraph generate_1f1b(const ScheduleRequest& request) {
  const StagePlan plan = plan_stages(request, request.processors);
  const int stages = request.processors;
  std::vector<std::vector<StageOp>> ops(stages);
  for (int s = 0; s < stages; ++s) {
    for (int k = 0; k < request.minibatches; ++k) {
      const auto order = one_f_one_b_order(s, stages - s - 1, k, request.microbatches, false);
      ops[s].insert(ops[s].end(), order.begin(), order.end());
      ops[s].push_back({TaskKind::U, s, k, -1});
    }
  }
  return build_pipeline(request, "1f1b", WeightSemantics::synchronous, plan, ops);
}

}  // namespace pipetwin
