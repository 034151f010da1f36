// stale-weights (Zhang & Abdelrahman): staleness per partition, no stashing, the hybrid
// switch-over, and bad PPVs.
#include <doctest/doctest.h>

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig stale_config(int P, const std::vector<std::string>& params, int minibatches = 12) {
  GraphConfig config = test::graph_config("resnet56", "stale-weights", "v100", P, 1, minibatches);
  config.params = params;
  return config;
}

}  // namespace

TEST_CASE("partition s of S reads weights 2(S-s)-1 updates stale; backwards read the newest") {
  for (const auto& [P, ppv] : {std::pair<int, std::string>{2, "19"}, {3, "19,37"}, {4, "9,19,37"}}) {
    const TaskGraph g = make_graph(stale_config(P, {"ppv=" + ppv}));
    REQUIRE(validate(g).empty());
    CHECK(g.stages[0].last_layer == std::stoi(ppv) - 1);  // after layer ppv[0], counted from 1
    for (const auto& t : g.tasks) {
      if (t.kind != TaskKind::F) continue;
      // Plain SGD would read version n for minibatch n.
      const int lag = 2 * (P - t.stage) - 1;
      CAPTURE(P);
      CAPTURE(t.stage);
      CAPTURE(t.minibatch);
      CHECK(t.version_read == std::max(0, t.minibatch - lag));
    }
  }
}

TEST_CASE("hybrid: the first fraction pipelined, then no staleness") {
  const TaskGraph g = make_graph(stale_config(2, {"ppv=19", "hybrid=0.5"}));
  REQUIRE(validate(g).empty());
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::F && t.minibatch >= 6) CHECK(t.version_read == t.minibatch);
  }
  // Nonpipelined minibatches run one at a time: slower per minibatch than pipelined ones.
  const double pipelined = evaluate(make_graph(stale_config(2, {"ppv=19"}))).iteration_cycles;
  const double sequential = evaluate(make_graph(stale_config(2, {"ppv=19", "hybrid=0"}))).iteration_cycles;
  CHECK(sequential > 1.5 * pipelined);
}

TEST_CASE("bad PPVs are clear errors") {
  CHECK_THROWS_WITH_AS(make_graph(stale_config(2, {"ppv=56"})),
                       doctest::Contains("ppv entry 56 is not between layer 1 and layer 55 of resnet56"), Error);
  CHECK_THROWS_WITH_AS(make_graph(stale_config(2, {"ppv=20"})),
                       doctest::Contains("would break a residual connection"), Error);
  CHECK_THROWS_WITH_AS(make_graph(stale_config(3, {"ppv=19"})),
                       doctest::Contains("makes 2 partitions, one per processor; set --procs 2"), Error);
  CHECK_THROWS_AS(make_graph(stale_config(2, {"ppv=19", "hybrid=1.5"})), Error);
}
