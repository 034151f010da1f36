// Which backwards share one assembled output gradient (exec/common/graph_flow.hpp,
// GraphFlow::assembly_group), against the graph read by hand: LayerPipe on one processor splits
// every BA in two parts, and both parts of a layer's BA and its BW read both parts of the next
// layer's BA; a fused schedule's backwards each have one reader of their gradient.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "../exec/common/graph_flow.hpp"
#include "pipetwin/schedule/registry.hpp"

using namespace pipetwin;
using namespace pipetwin::exec;

namespace {

GraphConfig lenet5_config(const std::string& schedule, int processors) {
  return graph_config("lenet5", schedule, "cpu-core", processors, 2, 2);
}

}  // namespace

TEST_CASE("graph flow: one processor's readers of the same gradient slices share one assembly") {
  const TaskGraph graph = make_graph(lenet5_config("layerpipe", 1));
  const auto layers = static_cast<std::int32_t>(make_request(lenet5_config("layerpipe", 1)).network.size());
  const GraphFlow flow = read_graph_flow(graph, layers);
  REQUIRE(flow.assembly_group.size() == graph.tasks.size());
  // By hand: per (minibatch, microbatch, layer) from the second to the one before the last, the
  // layer's BA parts and its BW. The first layer has no BA (nothing needs the gradient at the
  // network's input): its BW reads the slices alone, which is no group.
  std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t>, std::vector<std::int32_t>> expected;
  for (const auto& t : graph.tasks) {
    CHECK_FALSE((t.kind == TaskKind::BA && t.first_layer == 0));
    const bool reads_next = (t.kind == TaskKind::BA || t.kind == TaskKind::BW) && t.first_layer > 0 && t.last_layer + 1 < layers;
    if (reads_next) expected[{t.minibatch, t.microbatch, t.first_layer}].push_back(t.id);
  }
  REQUIRE(!expected.empty());
  std::set<std::int32_t> groups;
  for (const auto& [key, tasks] : expected) {
    CAPTURE(std::get<2>(key));
    CHECK(tasks.size() >= 2);
    const std::int32_t group = flow.assembly_group[static_cast<std::size_t>(tasks.front())];
    REQUIRE(group >= 0);
    for (const auto id : tasks) CHECK(flow.assembly_group[static_cast<std::size_t>(id)] == group);
    CHECK(flow.assembly_readers[static_cast<std::size_t>(group)] == static_cast<std::int32_t>(tasks.size()));
    groups.insert(group);
  }
  CHECK(groups.size() == expected.size());  // a group per layer and microbatch
  CHECK(flow.assembly_readers.size() == expected.size());
  // Every other task reads alone.
  std::size_t grouped = 0;
  for (const auto g : flow.assembly_group) grouped += g >= 0 ? 1 : 0;
  std::size_t listed = 0;
  for (const auto& [key, tasks] : expected) listed += tasks.size();
  CHECK(grouped == listed);
}

TEST_CASE("graph flow: fused backwards and readers on other processors assemble their own") {
  for (const std::string schedule : {"1f1b", "zb-h1", "sequential"}) {
    CAPTURE(schedule);
    const GraphConfig config = lenet5_config(schedule, schedule == "sequential" ? 1 : 2);
    const TaskGraph graph = make_graph(config);
    const GraphFlow flow = read_graph_flow(graph, static_cast<std::int32_t>(make_request(config).network.size()));
    CHECK(flow.assembly_readers.empty());
    for (const auto g : flow.assembly_group) CHECK(g == -1);
  }
  // LayerPipe on two processors: a group only where all of a gradient's readers are on the
  // processor that made it.
  const GraphConfig config = lenet5_config("layerpipe", 2);
  const TaskGraph graph = make_graph(config);
  const GraphFlow flow = read_graph_flow(graph, static_cast<std::int32_t>(make_request(config).network.size()));
  for (const auto& t : graph.tasks) {
    const std::int32_t group = flow.assembly_group[static_cast<std::size_t>(t.id)];
    if (group < 0) continue;
    for (const auto& d : t.deps) {
      if (d.carries != Carries::activation_gradient) continue;
      const Task& source = graph.tasks[static_cast<std::size_t>(d.task)];
      CHECK(source.placement == Placement::processor);
      CHECK(source.resource == t.resource);
    }
  }
}
