// Data parallelism across processes: which replicas' gradient sums each all-reduce step carries
// to another rank (exec/common/collective_shipments.hpp), against what a ring must do by hand:
// at step k, ring position i sends position (i - k) mod n's sum, one sum a step, and nothing
// after n - 1 steps. No MPI here: the runs themselves are tests/mpi/test_distributed.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "../exec/common/collective_shipments.hpp"
#include "pipetwin/exec/ranks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"

using namespace pipetwin;
using namespace pipetwin::exec;

namespace {

struct Planned {
  TaskGraph graph;
  GraphFlow flow;
  std::vector<std::int32_t> task_rank;
  std::map<std::int32_t, std::vector<std::int32_t>> carried;
};

Planned plan(const TaskGraph& graph, std::int32_t layers, std::int32_t ranks) {
  Planned p{graph, read_graph_flow(graph, layers), {}, {}};
  const std::int32_t processors = graph.processor_count();
  for (const auto& t : graph.tasks) {
    p.task_rank.push_back(t.placement == Placement::link ? rank_of_link(graph.links[static_cast<std::size_t>(t.resource)], processors, ranks)
                                                         : rank_of_processor(t.resource, processors, ranks));
  }
  p.carried = plan_collective_shipments(p.graph, p.flow, p.task_rank, ranks);
  return p;
}

GraphConfig dp_config(int processors, const std::vector<std::string>& extra) {
  GraphConfig config = graph_config("mlp", "gpipe", "cpu-core", processors, 2, 2);
  config.params = {"widths=16,16,16", "batch=8"};
  config.params.insert(config.params.end(), extra.begin(), extra.end());
  return config;
}

TaskGraph dp_graph(int processors, const std::vector<std::string>& extra) { return make_graph(dp_config(processors, extra)); }

std::int32_t mlp_layers() { return static_cast<std::int32_t>(make_request(dp_config(2, {})).network.size()); }

// Per receiving rank: how many times each update's sum reaches it.
std::map<std::int32_t, std::map<std::int32_t, int>> deliveries(const Planned& p, std::int32_t collective) {
  std::map<std::int32_t, std::map<std::int32_t, int>> got;
  const std::int32_t processors = p.graph.processor_count();
  const auto ranks = *std::max_element(p.task_rank.begin(), p.task_rank.end()) + 1;
  for (const auto& [step, sums] : p.carried) {
    const Task& t = p.graph.tasks[static_cast<std::size_t>(step)];
    if (t.collective != collective) continue;
    const std::int32_t to = rank_of_processor(p.graph.links[static_cast<std::size_t>(t.resource)].dst, processors, ranks);
    for (const auto u : sums) ++got[to][u];
  }
  return got;
}

}  // namespace

TEST_CASE("a ring all-reduce across 4 ranks carries position (i - k) mod 4's sum at step k from position i") {
  const Planned p = plan(dp_graph(4, {"dp=4"}), mlp_layers(), 4);  // one stage per replica, one rank each
  REQUIRE(!p.graph.collectives.empty());
  const int n = 4;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(p.graph.collectives.size()); ++c) {
    const auto& ring = p.graph.collectives[static_cast<std::size_t>(c)].processors;
    REQUIRE(ring.size() == 4u);
    std::map<std::int32_t, std::int32_t> update_on;  // processor -> its update in this all-reduce
    for (const auto u : p.flow.collective_updates.at(c)) update_on[p.graph.tasks[static_cast<std::size_t>(u)].resource] = u;
    std::map<std::int32_t, int> steps_from;  // processor -> steps seen so far (ids are in step order)
    int carrying = 0;
    for (const auto& t : p.graph.tasks) {
      if (t.collective != c) continue;
      const std::int32_t from = p.graph.links[static_cast<std::size_t>(t.resource)].src;
      const int i = static_cast<int>(std::find(ring.begin(), ring.end(), from) - ring.begin());
      const int k = steps_from[from]++;
      const auto it = p.carried.find(t.id);
      if (k <= n - 2) {
        REQUIRE(it != p.carried.end());
        CHECK(it->second == std::vector<std::int32_t>{update_on.at(ring[static_cast<std::size_t>(((i - k) % n + n) % n)])});
        ++carrying;
      } else {
        CHECK(it == p.carried.end());
      }
    }
    CHECK(carrying == n * (n - 1));
    for (const auto& [rank, got] : deliveries(p, c)) CHECK(got.size() == 3u);  // the 3 others, once each
  }
}

TEST_CASE("replicas that share a rank send each sum to the other rank once, and nothing between themselves") {
  const Planned p = plan(dp_graph(4, {"dp=4"}), mlp_layers(), 2);  // ranks {p0, p1} and {p2, p3}
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(p.graph.collectives.size()); ++c) {
    std::map<std::int32_t, std::set<std::int32_t>> expected;  // rank -> the other rank's updates
    for (const auto u : p.flow.collective_updates.at(c)) expected[1 - p.task_rank[static_cast<std::size_t>(u)]].insert(u);
    const auto got = deliveries(p, c);
    REQUIRE(got.size() == 2u);
    for (const auto& [rank, sums] : got) {
      std::set<std::int32_t> names;
      for (const auto& [u, times] : sums) {
        CHECK(times == 1);
        names.insert(u);
      }
      CHECK(names == expected.at(rank));
    }
  }
  for (const auto& [step, sums] : p.carried) {  // only steps between the ranks carry
    const Task& t = p.graph.tasks[static_cast<std::size_t>(step)];
    const LinkInfo& link = p.graph.links[static_cast<std::size_t>(t.resource)];
    CHECK(rank_of_processor(link.src, 4, 2) != rank_of_processor(link.dst, 4, 2));
  }
}

TEST_CASE("a hierarchical all-reduce brings every other rank's sum to every rank") {
  // Stage 0's replicas on p0-p3, two nodes of two: in each node, then across, then in each node.
  const Planned p = plan(dp_graph(8, {"dp=4", "allreduce=hierarchical", "processors_per_node=2"}), mlp_layers(), 8);
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(p.graph.collectives.size()); ++c) {
    REQUIRE(p.graph.collectives[static_cast<std::size_t>(c)].algorithm == "hierarchical");
    const auto got = deliveries(p, c);
    std::set<std::int32_t> ranks;  // those of the all-reduce
    for (const auto u : p.flow.collective_updates.at(c)) ranks.insert(p.task_rank[static_cast<std::size_t>(u)]);
    REQUIRE(ranks.size() == 4u);
    for (const auto u : p.flow.collective_updates.at(c)) {
      const std::int32_t home = p.task_rank[static_cast<std::size_t>(u)];
      for (const auto r : ranks) {
        if (r == home) continue;
        REQUIRE(got.count(r) == 1u);
        CHECK(got.at(r).count(u) == 1u);  // at least once (from the two nodes' sides, it may come twice)
      }
    }
  }
}

TEST_CASE("an all-reduce whose update could run before another rank's sum reaches it is refused") {
  TaskGraph g = dp_graph(2, {"dp=2"});  // a ring of 2: step 0 brings the other sum, step 1 follows it
  // Position 0's second step no longer waits for the step into its rank: its update, which follows
  // only the second steps, could run before the other replica's sum arrives.
  const std::int32_t c = 0;
  std::vector<std::int32_t> steps;
  for (const auto& t : g.tasks) {
    if (t.collective == c) steps.push_back(t.id);
  }
  REQUIRE(steps.size() == 4u);  // step 0 from p0 and p1, then step 1 from each
  Task* second = nullptr;
  for (const auto s : steps) {
    Task& t = g.tasks[static_cast<std::size_t>(s)];
    if (g.links[static_cast<std::size_t>(t.resource)].src == 0 &&
        std::any_of(t.deps.begin(), t.deps.end(), [&](const Dep& d) { return g.tasks[static_cast<std::size_t>(d.task)].collective == c; })) {
      second = &t;
    }
  }
  REQUIRE(second != nullptr);
  CHECK_NOTHROW(plan(g, mlp_layers(), 2));
  second->deps.erase(std::remove_if(second->deps.begin(), second->deps.end(),
                                    [&](const Dep& d) {
                                      const Task& s = g.tasks[static_cast<std::size_t>(d.task)];
                                      return s.collective == c && g.links[static_cast<std::size_t>(s.resource)].src == 1;
                                    }),
                     second->deps.end());
  CHECK_THROWS_WITH_AS(plan(g, mlp_layers(), 2), doctest::Contains("could run before the gradient sum"), Error);
  CHECK_NOTHROW(plan(g, mlp_layers(), 1));  // in one rank nothing crosses
}
