// Cuts a chain of layers into contiguous stages: the partition minimising the slowest stage
// (dynamic programming, as PipeDream's planner does), or cut points the user fixes.
#pragma once
#include <cstdint>
#include <vector>

namespace pipetwin {

struct Partition {
  std::vector<int> first_layer;  // per stage
  std::vector<int> last_layer;
  std::int64_t slowest_stage_cost = 0;
};

// Minimises max over stages of the summed layer costs, cutting only after layers whose
// `cut_allowed[i]` is true (the last layer's flag is ignored). Throws if `stages` stages cannot
// be made.
Partition balanced_partition(const std::vector<std::int64_t>& layer_costs,
                             const std::vector<bool>& cut_allowed, int stages);

// Stages from cut points: cut after each listed layer index (strictly increasing, allowed).
Partition fixed_partition(const std::vector<std::int64_t>& layer_costs,
                          const std::vector<bool>& cut_allowed, const std::vector<int>& cuts_after);

}  // namespace pipetwin
