// Which backwards share one assembled output gradient (exec/common/graph_flow.hpp,
// GraphFlow::assembly_group), which assemble one, and what it costs them
// (schedule/gradient_assembly.hpp), against the graph read by hand: LayerPipe on one processor splits
// every BA in two parts, and both parts of a layer's BA and its BW read both parts of the next
// layer's BA; a fused schedule's backwards each have one reader of their gradient.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "../exec/common/graph_flow.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/gradient_assembly.hpp"
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
  for (const auto& each_key_tasks : expected) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& key = each_key_tasks.first;
    const auto& tasks = each_key_tasks.second;
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

// Which backwards assemble their output's gradient from a split BA's slices
// (schedule/gradient_assembly.hpp), against the graph read by hand, and what that costs them.
TEST_CASE("gradient assemblies: one per layer and microbatch on one processor, one per reader across processors") {
  for (const int processors : {1, 2}) {
    CAPTURE(processors);
    const GraphConfig config = lenet5_config("layerpipe", processors);
    const TaskGraph graph = make_graph(config);
    const auto layers = static_cast<std::int32_t>(make_request(config).network.size());
    const GradientAssemblies a = gradient_assemblies(graph, layers);
    REQUIRE(a.assembles.size() == graph.tasks.size());
    // By hand: per (minibatch, microbatch, layer) but the last, the backwards over that layer that
    // read the next layer's BA parts (its own BA parts and BW; the first layer's BW alone).
    std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t>, std::vector<const Task*>> readers;
    for (const auto& t : graph.tasks) {
      const bool reads_next = (t.kind == TaskKind::BA || t.kind == TaskKind::BW) && t.last_layer + 1 < layers;
      if (reads_next) {
        readers[{t.minibatch, t.microbatch, t.first_layer}].push_back(&t);
      } else {
        CHECK_FALSE(a.assembles[static_cast<std::size_t>(t.id)]);  // forwards, updates, links, the last layer
      }
    }
    REQUIRE(!readers.empty());
    for (const auto& each_key_tasks : readers) {
      // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
      const auto& key = each_key_tasks.first;
      const auto& tasks = each_key_tasks.second;
      CAPTURE(std::get<2>(key));
      // The next layer's BA parts: on this layer's processor, the readers share one assembly
      // (the first in the processor's order makes it); on another, each reader makes its own.
      const std::int32_t layer = std::get<2>(key);
      bool next_here = false;
      for (const auto& t : graph.tasks) {
        if (t.kind == TaskKind::BA && t.first_layer == layer + 1 && t.minibatch == std::get<0>(key) &&
            t.microbatch == std::get<1>(key)) {
          next_here = t.resource == tasks.front()->resource;
        }
      }
      const Task* first = *std::min_element(tasks.begin(), tasks.end(), [](const Task* x, const Task* y) { return x->order < y->order; });
      for (const Task* t : tasks) {
        CHECK(a.assembles[static_cast<std::size_t>(t->id)] == (!next_here || t == first));
      }
    }
  }
  // Fused backwards read one whole gradient each: nothing to assemble.
  for (const std::string schedule : {"1f1b", "zb-h1", "sequential"}) {
    CAPTURE(schedule);
    const GraphConfig config = lenet5_config(schedule, schedule == "sequential" ? 1 : 2);
    const TaskGraph graph = make_graph(config);
    const GradientAssemblies a = gradient_assemblies(graph, static_cast<std::int32_t>(make_request(config).network.size()));
    for (const bool assembles : a.assembles) CHECK_FALSE(assembles);
  }
}

TEST_CASE("gradient assemblies: the tasks that assemble pay their last layer's assembly_s, scaled to their samples") {
  // lenet5 under LayerPipe on 2 processors, 2 microbatches of 4 samples, priced from a table of
  // 8 samples (so every figure halves); the same table with one layer's assembly_s set.
  GraphConfig config = graph_config("lenet5", "layerpipe", "cpu-core", 2, 2, 1);
  config.params = {"batch=8"};
  const Network network = make_request(config).network;
  const auto with_assembly = [&](double assembly_s, std::size_t layer) {
    auto table = std::make_shared<Calibration>();
    table->device = "cpu";
    table->samples = 8;
    for (const auto& l : network.layers) table->layers[l.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
    table->layers[network.layers[layer].name].assembly_s = assembly_s;
    GraphConfig c = config;
    c.calibration = table;
    return make_graph(c);
  };
  const std::size_t layer = 1;
  const TaskGraph without = with_assembly(-1, layer), with = with_assembly(2e-4, layer);
  REQUIRE(without.tasks.size() == with.tasks.size());
  REQUIRE(with.samples_per_microbatch == 4);
  const GradientAssemblies a = gradient_assemblies(with, static_cast<std::int32_t>(network.size()));
  const auto cycles = static_cast<std::int64_t>(std::ceil(2e-4 * 4.0 / 8.0 * with.clock_hz));
  int charged = 0;
  for (std::size_t i = 0; i < with.tasks.size(); ++i) {
    const Task& t = with.tasks[i];
    CAPTURE(describe_task(with, t));
    const bool pays = a.assembles[i] && t.last_layer == static_cast<std::int32_t>(layer);
    CHECK(with.tasks[i].cost_cycles - without.tasks[i].cost_cycles == (pays ? cycles : 0));
    charged += pays ? 1 : 0;
  }
  CHECK(charged >= 2);  // each microbatch's assembly at layer 1
}
