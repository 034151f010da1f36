// `interleaved-1f1b` (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM", SC'21): each processor holds v model chunks (`chunks=v`), so the
// layers are cut into v*P stages and stage c*P + r runs on processor r. Megatron-LM's order per
// processor r: 2(P-r-1) + (v-1)P warm-up forwards, then one forward and one backward alternately,
// then the remaining backwards; forward step i works on chunk (i/P) mod v and microbatch
// (i/(Pv))P + i mod P, backward step i on chunk v-1-((i/P) mod v) and the same microbatch. The
// bubble shrinks v-fold: (P-1)/(vM+P-1) of the time with uniform stages. Needs M a multiple of P.
// Synchronous: one update per stage per minibatch after the flush.
#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {

TaskGraph generate_interleaved_1f1b(const ScheduleRequest& request) {
  const int P = request.processors, M = request.microbatches;
  const std::int64_t chunks = request.params.get_int("chunks", 2);
  if (chunks < 1) throw Error("interleaved-1f1b: chunks must be at least 1");
  const int v = static_cast<int>(chunks);
  if (M % P != 0) {
    throw Error("interleaved-1f1b: the microbatches (" + std::to_string(M) +
                ") must be a multiple of the processors (" + std::to_string(P) + ")");
  }
  const StagePlan plan = plan_stages(request, v * P);  // stage s on processor s % P
  const int steps = M * v;
  auto microbatch = [&](int i) { return (i / (P * v)) * P + i % P; };
  std::vector<std::vector<StageOp>> ops(P);
  for (int r = 0; r < P; ++r) {
    const int warmup = std::min(steps, (P - r - 1) * 2 + (v - 1) * P);
    for (int k = 0; k < request.minibatches; ++k) {
      auto forward = [&](int i) {
        ops[r].push_back({TaskKind::F, ((i / P) % v) * P + r, k, microbatch(i)});
      };
      auto backward = [&](int i) {
        ops[r].push_back({TaskKind::B, (v - 1 - (i / P) % v) * P + r, k, microbatch(i)});
      };
      for (int i = 0; i < warmup; ++i) forward(i);
      for (int i = 0; i < steps - warmup; ++i) {
        forward(warmup + i);
        backward(i);
      }
      for (int i = steps - warmup; i < steps; ++i) backward(i);
      for (int c = 0; c < v; ++c) ops[r].push_back({TaskKind::U, c * P + r, k, -1});
    }
  }
  return build_pipeline(request, "interleaved-1f1b", WeightSemantics::synchronous, plan, ops);
}

}  // namespace pipetwin
