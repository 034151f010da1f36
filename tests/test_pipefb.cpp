// pipefb: forwards on F-nodes, backwards and updates on B-nodes, activations through host memory,
// new weights back to the F-node before the forward that reads them, staleness 2(S-1-s) + lag; with
// fewer F-nodes than B-nodes (fnodes=), consecutive stages share an F-node.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig pipefb_config(int P, std::vector<std::string> params = {}) {
  GraphConfig config = test::graph_config("resnet56", "pipefb", "h100", P, 4, 3);
  config.params = std::move(params);
  return config;
}

}  // namespace

TEST_CASE("pipefb: forwards and backwards of a stage on two processors, activations via host") {
  for (int P : {2, 4, 6}) {
    const TaskGraph g = make_graph(pipefb_config(P));
    REQUIRE(validate(g).empty());
    const int S = P / 2;
    REQUIRE(static_cast<int>(g.stages.size()) == S);
    for (int s = 0; s < S; ++s) {
      CHECK(g.stages[s].forward_processor == s);
      CHECK(g.stages[s].processor == P - 1 - s);
      CHECK(g.stages[s].weight_delay == 2 * (S - 1 - s) + 2);
    }
    int offloads = 0, reloads = 0, forwards = 0;
    for (const auto& t : g.tasks) {
      if (t.kind == TaskKind::F) {
        ++forwards;
        CHECK(t.resource == g.stages[t.stage].forward_processor);
        CHECK(t.version_read == std::max(0, t.minibatch * g.microbatches + t.microbatch - g.stages[t.stage].weight_delay));
      }
      if (is_backward(t.kind) || t.kind == TaskKind::U) CHECK(t.resource == g.stages[t.stage].processor);
      if (t.kind == TaskKind::OFF) {
        ++offloads;
        CHECK(g.links[t.resource].src == g.stages[t.stage].forward_processor);
      }
      if (t.kind == TaskKind::ON) {
        ++reloads;
        CHECK(g.links[t.resource].dst == g.stages[t.stage].processor);
      }
    }
    CHECK(offloads == forwards);
    CHECK(reloads == forwards);
  }
}

TEST_CASE("pipefb: a forward that waits for no weight transfer is caught") {
  TaskGraph g = make_graph(pipefb_config(4));
  for (auto& t : g.tasks) {
    if (t.kind == TaskKind::F && t.version_read > 0) {
      t.deps.erase(std::remove_if(t.deps.begin(), t.deps.end(),
                                  [&](const Dep& d) { return d.carries == Carries::weights; }),
                   t.deps.end());
      break;
    }
  }
  const auto problems = validate(g);
  REQUIRE(!problems.empty());
  CHECK(problems.front().find("no dependency on the update that writes it") != std::string::npos);
}

TEST_CASE("pipefb with fewer F-nodes: P - fnodes stages, consecutive stages' forwards share an F-node") {
  for (const auto& each_p_fnodes : {std::pair<int, int>{3, 1}, {5, 2}, {7, 3}, {8, 3}, {8, 1}}) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& P = each_p_fnodes.first;
    const auto& fnodes = each_p_fnodes.second;
    const TaskGraph g = make_graph(pipefb_config(P, {"fnodes=" + std::to_string(fnodes)}));
    CAPTURE(P);
    CAPTURE(fnodes);
    REQUIRE(validate(g).empty());
    const int S = P - fnodes;
    REQUIRE(static_cast<int>(g.stages.size()) == S);
    std::vector<int> stages_of_fnode(fnodes, 0);
    for (int s = 0; s < S; ++s) {
      const int f = g.stages[s].forward_processor;
      REQUIRE(f >= 0);
      REQUIRE(f < fnodes);
      if (s > 0) CHECK(f >= g.stages[s - 1].forward_processor);  // consecutive stages, in order
      ++stages_of_fnode[f];
      CHECK(g.stages[s].processor == P - 1 - s);
      CHECK(g.stages[s].weight_delay == 2 * (S - 1 - s) + 2);
    }
    // Every F-node runs forwards, and they are spread within one stage of evenly.
    const auto [fewest, most] = std::minmax_element(stages_of_fnode.begin(), stages_of_fnode.end());
    CHECK(*fewest >= 1);
    CHECK(*most - *fewest <= 1);
    for (const auto& t : g.tasks) {
      if (t.kind == TaskKind::F) CHECK(t.resource == g.stages[t.stage].forward_processor);
      if (is_backward(t.kind) || t.kind == TaskKind::U) CHECK(t.resource == g.stages[t.stage].processor);
    }
  }
}

TEST_CASE("pipefb parameters: clear errors") {
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"fnodes=4"})), doctest::Contains("1 <= fnodes <= P - 1"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"fnodes=3"})), doctest::Contains("leaves 1 B-nodes"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(3)), doctest::Contains("--procs must be even"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"lag=0"})), doctest::Contains("lag must be at least 1"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"cuts=3,9"})), doctest::Contains("makes 3 stages"), Error);
}
