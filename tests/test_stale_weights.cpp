// stale-weights (Zhang & Abdelrahman): staleness per partition, no stashing (and stash=true, the
// same pipeline with PipeDream's stashing), the hybrid switch-over, and bad PPVs.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <utility>

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

TEST_CASE("partition s of S reads weights 2(S-s)-1 updates stale, backwards read the newest") {
  for (const auto& each_p_ppv : {std::pair<int, std::string>{2, "19"}, {3, "19,37"}, {4, "9,19,37"}}) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& P = each_p_ppv.first;
    const auto& ppv = each_p_ppv.second;
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

TEST_CASE("stash=true: the same pipeline and forwards, backwards read their forward's version, more versions held") {
  const TaskGraph stale = make_graph(stale_config(2, {"ppv=19"}));
  const TaskGraph stashed = make_graph(stale_config(2, {"ppv=19", "stash=true"}));
  REQUIRE(validate(stashed).empty());
  CHECK(stashed.semantics == WeightSemantics::stashed);
  REQUIRE(stale.tasks.size() == stashed.tasks.size());
  std::map<std::pair<int, int>, int> forward_version;  // (stage, minibatch) -> version its forward read
  for (const auto& t : stashed.tasks) {
    if (t.kind == TaskKind::F) forward_version[{t.stage, t.minibatch}] = t.version_read;
  }
  int backwards = 0;
  for (std::size_t i = 0; i < stashed.tasks.size(); ++i) {
    const Task& a = stale.tasks[i];
    const Task& b = stashed.tasks[i];
    CHECK(a.kind == b.kind);
    CHECK(a.resource == b.resource);
    if (b.kind == TaskKind::F) CHECK(a.version_read == b.version_read);  // the same staleness forward
    if (b.kind == TaskKind::B) {
      CHECK(b.version_read == forward_version.at({b.stage, b.minibatch}));
      // Without stashing the backward reads the newest: every update before it, one per minibatch.
      CHECK(a.version_read >= b.version_read);
      ++backwards;
    }
  }
  CHECK(backwards == 2 * 12);
  // The versions a backward reads stay until it: more memory where the weights weigh (vgg16 with a
  // register after layer 2: partition 1 holds 14 of its 16 layers' weights, 2 versions in flight).
  auto device_1_peak = [](const std::string& stash) {
    GraphConfig config = test::graph_config("vgg16", "stale-weights", "v100", 2, 1, 12);
    config.params = {"ppv=2", "stash=" + stash};
    return evaluate(make_graph(config)).peak_memory_bytes[1];
  };
  CHECK(device_1_peak("true") > device_1_peak("false"));
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
