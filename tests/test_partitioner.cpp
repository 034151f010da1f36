// The balanced partitioner against brute force, and fixed cut points.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/partitioner.hpp"

using namespace pipetwin;

namespace {

// Tries every choice of stages-1 allowed cut points; returns the smallest slowest stage.
std::int64_t brute_force(const std::vector<std::int64_t>& costs, const std::vector<bool>& allowed,
                         int stages) {
  std::vector<int> points;
  for (std::size_t i = 0; i + 1 < costs.size(); ++i) {
    if (allowed[i]) points.push_back(static_cast<int>(i));
  }
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  const int n = static_cast<int>(points.size());
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != stages - 1) continue;
    std::int64_t slowest = 0, running = 0;
    for (std::size_t l = 0; l < costs.size(); ++l) {
      running += costs[l];
      const auto it = std::find(points.begin(), points.end(), static_cast<int>(l));
      if (it != points.end() && (mask >> (it - points.begin())) & 1u) {
        slowest = std::max(slowest, running);
        running = 0;
      }
    }
    best = std::min(best, std::max(slowest, running));
  }
  return best;
}

}  // namespace

TEST_CASE("the balanced partition equals brute force on 100 random small networks") {
  std::mt19937 rng(20261121);
  for (int trial = 0; trial < 100; ++trial) {
    const int layers = std::uniform_int_distribution<int>(1, 12)(rng);
    std::vector<std::int64_t> costs(layers);
    std::vector<bool> allowed(layers);
    int cut_points = 0;
    for (int l = 0; l < layers; ++l) {
      costs[l] = std::uniform_int_distribution<int>(1, 100)(rng);
      allowed[l] = std::uniform_int_distribution<int>(0, 9)(rng) < 7;
      if (l + 1 < layers && allowed[l]) ++cut_points;
    }
    const int stages = std::uniform_int_distribution<int>(1, cut_points + 1)(rng);
    CAPTURE(trial);
    const Partition partition = balanced_partition(costs, allowed, stages);
    CHECK(partition.slowest_stage_cost == brute_force(costs, allowed, stages));
    // The partition is what it claims: contiguous, covering, cut only where allowed.
    REQUIRE(partition.first_layer.size() == static_cast<std::size_t>(stages));
    CHECK(partition.first_layer.front() == 0);
    CHECK(partition.last_layer.back() == layers - 1);
    std::int64_t slowest = 0;
    for (int s = 0; s < stages; ++s) {
      if (s > 0) {
        CHECK(partition.first_layer[s] == partition.last_layer[s - 1] + 1);
        CHECK(allowed[partition.last_layer[s - 1]]);
      }
      std::int64_t cost = 0;
      for (int l = partition.first_layer[s]; l <= partition.last_layer[s]; ++l) cost += costs[l];
      slowest = std::max(slowest, cost);
    }
    CHECK(slowest == partition.slowest_stage_cost);
  }
}

TEST_CASE("too many stages, and bad fixed cuts, are clear errors") {
  const std::vector<std::int64_t> costs = {1, 1, 1, 1};
  const std::vector<bool> allowed = {true, false, true, true};
  CHECK_THROWS_WITH_AS(balanced_partition(costs, allowed, 4),
                       doctest::Contains("only 2 cut points are allowed (never inside a residual block), so at most 3 stages"),
                       Error);
  CHECK(fixed_partition(costs, allowed, {0, 2}).slowest_stage_cost == 2);
  CHECK_THROWS_WITH_AS(fixed_partition(costs, allowed, {1}), doctest::Contains("residual"), Error);
  CHECK_THROWS_AS(fixed_partition(costs, allowed, {2, 0}), Error);
  CHECK_THROWS_AS(fixed_partition(costs, allowed, {3}), Error);
}

TEST_CASE("layer-wise merging: fewest cut bytes within the bound, then the fastest, equals brute force") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 100; ++trial) {
    const int layers = std::uniform_int_distribution<int>(2, 11)(rng);
    std::vector<std::int64_t> costs(layers), bytes(layers);
    std::vector<bool> allowed(layers, true);
    for (int l = 0; l < layers; ++l) {
      costs[l] = std::uniform_int_distribution<int>(1, 50)(rng);
      bytes[l] = std::uniform_int_distribution<int>(1, 1000)(rng);
    }
    const int stages = std::uniform_int_distribution<int>(1, layers)(rng);
    const std::int64_t balanced = balanced_partition(costs, allowed, stages).slowest_stage_cost;
    const std::int64_t bound = balanced + balanced / 5;
    // Brute force over every set of stages-1 cuts.
    std::pair<std::int64_t, std::int64_t> expected{std::numeric_limits<std::int64_t>::max(), 0};
    for (unsigned mask = 0; mask < (1u << (layers - 1)); ++mask) {
      if (__builtin_popcount(mask) != stages - 1) continue;
      std::int64_t sent = 0, slowest = 0, running = 0;
      for (int l = 0; l < layers; ++l) {
        running += costs[l];
        if (l + 1 < layers && ((mask >> l) & 1u)) {
          sent += bytes[l];
          slowest = std::max(slowest, running);
          running = 0;
        }
      }
      slowest = std::max(slowest, running);
      if (slowest <= bound) expected = std::min(expected, {sent, slowest});
    }
    CAPTURE(trial);
    const Partition merged = least_communication_partition(costs, allowed, bytes, stages, bound);
    std::int64_t sent = 0;
    for (int s = 0; s + 1 < stages; ++s) sent += bytes[merged.last_layer[s]];
    CHECK(sent == expected.first);
    CHECK(merged.slowest_stage_cost == expected.second);
    CHECK(merged.slowest_stage_cost <= bound);
  }
}
