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

// Layer-wise merging: of the partitions into `stages` stages whose slowest stage costs at most
// `max_stage_cost`, the one whose cuts carry the fewest bytes (`boundary_bytes[i]`: what a cut
// after layer i sends). Throws if no partition meets the bound.
Partition least_communication_partition(const std::vector<std::int64_t>& layer_costs,
                                        const std::vector<bool>& cut_allowed,
                                        const std::vector<std::int64_t>& boundary_bytes, int stages,
                                        std::int64_t max_stage_cost);

// Stages from cut points: cut after each listed layer index (strictly increasing, allowed).
Partition fixed_partition(const std::vector<std::int64_t>& layer_costs,
                          const std::vector<bool>& cut_allowed, const std::vector<int>& cuts_after);

}  // namespace pipetwin
