// Contiguous partition of a layer chain into stages minimising the slowest stage (dynamic
// programming over prefix sums, as in PipeDream's planner), or from fixed cut points.
#include "pipetwin/schedule/partitioner.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

void check_inputs(const std::vector<std::int64_t>& costs, const std::vector<bool>& cut_allowed) {
  if (costs.empty()) throw Error("partition: no layers");
  if (cut_allowed.size() != costs.size()) {
    throw Error("partition: cut_allowed must have one flag per layer");
  }
}

Partition from_cuts(const std::vector<std::int64_t>& costs, const std::vector<int>& cuts_after) {
  Partition partition;
  int first = 0;
  std::vector<int> ends = cuts_after;
  ends.push_back(static_cast<int>(costs.size()) - 1);
  for (const int last : ends) {
    std::int64_t stage_cost = 0;
    for (int l = first; l <= last; ++l) stage_cost += costs[l];
    partition.first_layer.push_back(first);
    partition.last_layer.push_back(last);
    partition.slowest_stage_cost = std::max(partition.slowest_stage_cost, stage_cost);
    first = last + 1;
  }
  return partition;
}

}  // namespace

Partition balanced_partition(const std::vector<std::int64_t>& layer_costs,
                             const std::vector<bool>& cut_allowed, int stages) {
  check_inputs(layer_costs, cut_allowed);
  const int layers = static_cast<int>(layer_costs.size());
  int cut_points = 0;
  for (int i = 0; i + 1 < layers; ++i) cut_points += cut_allowed[i] ? 1 : 0;
  if (stages < 1) throw Error("partition: need at least one stage, got " + std::to_string(stages));
  if (stages > cut_points + 1) {
    throw Error("cannot cut " + std::to_string(layers) + " layers into " + std::to_string(stages) +
                " stages: only " + std::to_string(cut_points) +
                " cut points are allowed (never inside a residual block), so at most " +
                std::to_string(cut_points + 1) + " stages");
  }
  std::vector<std::int64_t> prefix(layers + 1, 0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + layer_costs[i];
  // can_end[i]: a stage may end after the first i layers (i = layers always may).
  auto can_end = [&](int i) { return i == layers || (i > 0 && cut_allowed[i - 1]); };

  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  // best[j][i]: the smallest slowest stage over the first i layers cut into j stages.
  std::vector<std::vector<std::int64_t>> best(stages + 1, std::vector<std::int64_t>(layers + 1, kInf));
  std::vector<std::vector<int>> choice(stages + 1, std::vector<int>(layers + 1, -1));
  best[0][0] = 0;
  for (int j = 1; j <= stages; ++j) {
    for (int i = j; i <= layers; ++i) {
      if (!can_end(i)) continue;
      for (int k = j - 1; k < i; ++k) {  // previous stages cover the first k layers
        if (best[j - 1][k] == kInf) continue;
        const std::int64_t slowest = std::max(best[j - 1][k], prefix[i] - prefix[k]);
        if (slowest < best[j][i]) {
          best[j][i] = slowest;
          choice[j][i] = k;
        }
      }
    }
  }
  std::vector<int> cuts;
  for (int j = stages, i = layers; j > 1; --j) {
    i = choice[j][i];
    cuts.push_back(i - 1);
  }
  std::reverse(cuts.begin(), cuts.end());
  Partition partition = from_cuts(layer_costs, cuts);
  partition.slowest_stage_cost = best[stages][layers];
  return partition;
}

Partition least_communication_partition(const std::vector<std::int64_t>& layer_costs,
                                        const std::vector<bool>& cut_allowed,
                                        const std::vector<std::int64_t>& boundary_bytes, int stages,
                                        std::int64_t max_stage_cost) {
  check_inputs(layer_costs, cut_allowed);
  const int layers = static_cast<int>(layer_costs.size());
  if (stages < 1 || stages > layers) throw Error("partition: cannot make " + std::to_string(stages) + " stages");
  std::vector<std::int64_t> prefix(layers + 1, 0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + layer_costs[i];
  auto can_end = [&](int i) { return i == layers || (i > 0 && cut_allowed[i - 1]); };
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  // best[j][i]: for the first i layers in j stages within the bound, the fewest bytes over the
  // cuts and, among those, the smallest slowest stage.
  using Score = std::pair<std::int64_t, std::int64_t>;
  const Score none{kInf, kInf};
  std::vector<std::vector<Score>> best(stages + 1, std::vector<Score>(layers + 1, none));
  std::vector<std::vector<int>> choice(stages + 1, std::vector<int>(layers + 1, -1));
  best[0][0] = {0, 0};
  for (int j = 1; j <= stages; ++j) {
    for (int i = j; i <= layers; ++i) {
      if (!can_end(i)) continue;
      for (int k = j - 1; k < i; ++k) {
        const std::int64_t stage_cost = prefix[i] - prefix[k];
        if (best[j - 1][k] == none || stage_cost > max_stage_cost) continue;
        const Score score{best[j - 1][k].first + (i < layers ? boundary_bytes[i - 1] : 0),
                          std::max(best[j - 1][k].second, stage_cost)};
        if (score < best[j][i]) {
          best[j][i] = score;
          choice[j][i] = k;
        }
      }
    }
  }
  if (best[stages][layers] == none) {
    throw Error("no partition into " + std::to_string(stages) + " stages keeps every stage within " +
                std::to_string(max_stage_cost) + " cycles");
  }
  std::vector<int> cuts;
  for (int j = stages, i = layers; j > 1; --j) {
    i = choice[j][i];
    cuts.push_back(i - 1);
  }
  std::reverse(cuts.begin(), cuts.end());
  return from_cuts(layer_costs, cuts);
}

Partition fixed_partition(const std::vector<std::int64_t>& layer_costs,
                          const std::vector<bool>& cut_allowed, const std::vector<int>& cuts_after) {
  check_inputs(layer_costs, cut_allowed);
  const int layers = static_cast<int>(layer_costs.size());
  for (std::size_t i = 0; i < cuts_after.size(); ++i) {
    const int cut = cuts_after[i];
    if (cut < 0 || cut >= layers - 1) {
      throw Error("cut after layer " + std::to_string(cut) + ": must be between 0 and " +
                  std::to_string(layers - 2) + " (layers are numbered from 0)");
    }
    if (i > 0 && cut <= cuts_after[i - 1]) throw Error("cuts must be strictly increasing");
    if (!cut_allowed[cut]) {
      throw Error("cut after layer " + std::to_string(cut) +
                  " would break a residual connection; cut between residual blocks");
    }
  }
  return from_cuts(layer_costs, cuts_after);
}

}  // namespace pipetwin
