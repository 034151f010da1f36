// `zb-h1`, `zb-h2` (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the backward is
// split into BA (activation gradient, on the critical path: it is sent on at once) and BW (weight
// gradient, which only the update needs), and BW fills the bubbles. The paper draws ZB-H1 and
// ZB-H2 by hand and also gives a heuristic scheduler; we build both orders with one list scheduler
// in that spirit, per stage and in time order:
//   1. a BA whose gradient has arrived runs first;
//   2. else a forward, while fewer of the stage's microbatches than its limit are between their F
//      and their BA (BA frees the activations except the layer inputs, which BW frees);
//   3. else the oldest pending BW -- which goes before forwards once 2S BW are pending, so the
//      layer inputs they hold stay bounded when M is large (2S keeps the closed-form bubbles of
//      the tests; a bound of S or the stage's limit loses part of them).
// The limit is 1F1B's, S-s on stage s, for zb-h1 (same memory as 1f1b, a third of its bubble
// when F = BA = BW) and 2(S-s)-1 for zb-h2 (about twice the memory, almost no bubble).
// `max_in_flight=N` sets one limit for every stage instead. Synchronous: one update per stage
// per minibatch after a flush. The order is computed from the cost model's cycles with
// contention-free transfers; engines then time it as they time any graph.
#include <algorithm>
#include <deque>
#include <limits>

#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/generators.hpp"

namespace pipetwin {
namespace {

constexpr std::int64_t kUnknown = std::numeric_limits<std::int64_t>::max();

struct StageCosts {
  std::int64_t forward, input_grad, weight_grad;
  std::int64_t send_activation;  // to the next stage
  std::int64_t send_gradient;    // to the previous stage
};

std::vector<StageCosts> stage_costs(const ScheduleRequest& request, const StagePlan& plan) {
  const Network& net = request.network;
  const HardwareProfile& hw = request.hardware;
  const std::int64_t samples = net.batch / request.microbatches;
  std::vector<StageCosts> costs;
  for (std::size_t s = 0; s < plan.stage_processor.size(); ++s) {
    const int first = plan.partition.first_layer[s], last = plan.partition.last_layer[s];
    costs.push_back({compute_task_cycles(hw, net, TaskKind::F, first, last, samples),
                     compute_task_cycles(hw, net, TaskKind::BA, first, last, samples),
                     compute_task_cycles(hw, net, TaskKind::BW, first, last, samples),
                     transfer_cycles(hw, hw.link, net.layers[last].output_bytes * samples),
                     transfer_cycles(hw, hw.link, net.layers[first].input_bytes * samples)});
  }
  return costs;
}

// One minibatch's order of F, BA and BW on every stage.
std::vector<std::vector<StageOp>> split_backward_order(const std::vector<StageCosts>& costs,
                                                       const std::vector<int>& limits,
                                                       int minibatch, int microbatches) {
  const int stages = static_cast<int>(costs.size());
  const int M = microbatches;
  struct Stage {
    std::int64_t free_at = 0;
    int next_forward = 0, next_input_grad = 0, in_flight = 0, done = 0;
    std::vector<std::int64_t> forward_ready, forward_end, gradient_arrives;
    std::deque<std::pair<int, std::int64_t>> pending_weight_grads;  // (microbatch, ready)
  };
  std::vector<Stage> state(stages);
  for (int s = 0; s < stages; ++s) {
    state[s].forward_ready.assign(M, s == 0 ? 0 : kUnknown);
    state[s].forward_end.assign(M, kUnknown);
    state[s].gradient_arrives.assign(M, s == stages - 1 ? 0 : kUnknown);
  }
  std::vector<std::vector<StageOp>> ops(stages);
  int remaining = 3 * M * stages;
  while (remaining > 0) {
    // Each stage's best next op and when it could start; run the earliest of all.
    int best_stage = -1;
    TaskKind best_kind = TaskKind::F;
    std::int64_t best_start = kUnknown;
    for (int s = 0; s < stages; ++s) {
      Stage& st = state[s];
      std::int64_t start = kUnknown;
      TaskKind kind = TaskKind::F;
      auto consider = [&](TaskKind candidate, std::int64_t ready) {
        if (ready == kUnknown) return;
        const std::int64_t at = std::max(st.free_at, ready);
        if (at < start) {  // strictly earlier wins; at equal times the earlier-listed kind wins
          start = at;
          kind = candidate;
        }
      };
      if (st.next_input_grad < st.next_forward) {
        const int m = st.next_input_grad;
        const std::int64_t end = st.forward_end[m], arrives = st.gradient_arrives[m];
        consider(TaskKind::BA, end == kUnknown || arrives == kUnknown ? kUnknown : std::max(end, arrives));
      }
      const bool weights_due = static_cast<int>(st.pending_weight_grads.size()) >= 2 * stages;
      if (weights_due) consider(TaskKind::BW, st.pending_weight_grads.front().second);
      if (st.next_forward < M && st.in_flight < limits[s]) consider(TaskKind::F, st.forward_ready[st.next_forward]);
      if (!weights_due && !st.pending_weight_grads.empty()) {
        consider(TaskKind::BW, st.pending_weight_grads.front().second);
      }
      if (start < best_start) {
        best_start = start;
        best_stage = s;
        best_kind = kind;
      }
    }
    if (best_stage < 0) throw Error("internal: the zero-bubble scheduler is stuck");
    Stage& st = state[best_stage];
    const StageCosts& c = costs[best_stage];
    int m = 0;
    if (best_kind == TaskKind::F) {
      m = st.next_forward++;
      ++st.in_flight;
      st.forward_end[m] = best_start + c.forward;
      st.free_at = st.forward_end[m];
      if (best_stage + 1 < stages) state[best_stage + 1].forward_ready[m] = st.forward_end[m] + c.send_activation;
    } else if (best_kind == TaskKind::BA) {
      m = st.next_input_grad++;
      --st.in_flight;
      st.free_at = best_start + c.input_grad;
      st.pending_weight_grads.push_back({m, st.free_at});
      if (best_stage > 0) state[best_stage - 1].gradient_arrives[m] = st.free_at + c.send_gradient;
    } else {
      m = st.pending_weight_grads.front().first;
      st.pending_weight_grads.pop_front();
      st.free_at = best_start + c.weight_grad;
    }
    ops[best_stage].push_back({best_kind, best_stage, minibatch, m});
    --remaining;
  }
  return ops;
}

TaskGraph generate_zero_bubble(const ScheduleRequest& request, const std::string& name, bool h2) {
  const StagePlan plan = plan_stages(request, request.processors);
  const int stages = request.processors;
  std::vector<int> limits(stages);
  const std::int64_t fixed = request.params.get_int("max_in_flight", 0);
  if (fixed < 0) throw Error(name + ": max_in_flight must be at least 1");
  for (int s = 0; s < stages; ++s) {
    const int natural = h2 ? 2 * (stages - s) - 1 : stages - s;
    limits[s] = static_cast<int>(std::max<std::int64_t>(1, fixed > 0 ? fixed : natural));
  }
  const auto costs = stage_costs(request, plan);
  std::vector<std::vector<StageOp>> ops(stages);
  for (int k = 0; k < request.minibatches; ++k) {
    const auto order = split_backward_order(costs, limits, k, request.microbatches);
    for (int s = 0; s < stages; ++s) {
      ops[s].insert(ops[s].end(), order[s].begin(), order[s].end());
      ops[s].push_back({TaskKind::U, s, k, -1});
    }
  }
  return build_pipeline(request, name, WeightSemantics::synchronous, plan, ops);
}

}  // namespace

TaskGraph generate_zb_h1(const ScheduleRequest& request) { return generate_zero_bubble(request, "zb-h1", false); }
TaskGraph generate_zb_h2(const ScheduleRequest& request) { return generate_zero_bubble(request, "zb-h2", true); }

}  // namespace pipetwin
