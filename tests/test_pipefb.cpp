// pipefb: forwards on F-nodes, backwards and updates on B-nodes, activations through host memory,
// new weights back to the F-node before the forward that reads them, staleness 2(S-1-s) + lag.
#include <doctest/doctest.h>

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

TEST_CASE("pipefb parameters: clear errors") {
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(3)), doctest::Contains("--procs must be even"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"lag=0"})), doctest::Contains("lag must be at least 1"), Error);
  CHECK_THROWS_WITH_AS(make_graph(pipefb_config(4, {"cuts=3,9"})), doctest::Contains("makes 3 stages"), Error);
}
