// A step peak over the phases of a graph's processors (exec/step_peak_over_phases.hpp): a
// processor paced off its price (every cost on it scaled, rounded up; nothing else moved); the
// largest step peak over each processor paced each way, against the same predictions made one by
// one here; and a table's task spread (Calibration::task_time_spread) from a run laid out by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/step_peak_over_phases.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"

using namespace pipetwin;

namespace {

// Per processor of a two-processor graph, the cost of its first task there (-1: none).
std::vector<std::int64_t> first_costs(const TaskGraph& graph) {
  std::vector<std::int64_t> cost(2, -1);
  for (const auto& t : graph.tasks) {
    if (t.placement == Placement::processor && cost[static_cast<std::size_t>(t.resource)] < 0) {
      cost[static_cast<std::size_t>(t.resource)] = t.cost_cycles;
    }
  }
  return cost;
}

}  // namespace

TEST_CASE("a processor paced off its price: its tasks' costs scaled and rounded up, nothing else moved") {
  const TaskGraph graph = make_graph(graph_config("resnet8", "1f1b", "cpu-core", 2, 4, 2));
  const TaskGraph slower = with_processor_paced(graph, 1, 1.03);
  REQUIRE(slower.tasks.size() == graph.tasks.size());
  int paced = 0;
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const Task& before = graph.tasks[i];
    const Task& after = slower.tasks[i];
    CHECK(after.deps.size() == before.deps.size());
    if (before.placement == Placement::processor && before.resource == 1) {
      // ceil(c * 1.03), in integers: (103 c + 99) / 100.
      CHECK(after.cost_cycles == (103 * before.cost_cycles + 99) / 100);
      CHECK(after.memory_cycles == std::min(after.cost_cycles, (103 * before.memory_cycles + 99) / 100));
      paced += before.cost_cycles > 0;
    } else {
      CHECK(after.cost_cycles == before.cost_cycles);
      CHECK(after.memory_cycles == before.memory_cycles);
    }
  }
  CHECK(paced > 0);
  CHECK(with_processor_paced(graph, 0, 1.0).tasks[0].cost_cycles == graph.tasks[0].cost_cycles);
  CHECK_THROWS_AS(with_processor_paced(graph, 2, 1.1), Error);
  CHECK_THROWS_AS(with_processor_paced(graph, -1, 1.1), Error);
  CHECK_THROWS_AS(with_processor_paced(graph, 0, 0.0), Error);
  CHECK_THROWS_AS(with_processor_paced(graph, 0, std::nan("")), Error);
}

TEST_CASE("a step peak over phases: each processor paced each way, the largest, none with one processor or none asked") {
  // The predictor sees which processor is paced which way by the first task's cost on it, and
  // reports a peak of its own for each: the result is the largest of those and the nominal.
  const TaskGraph graph = make_graph(graph_config("mlp", "1f1b", "cpu-core", 2, 2, 2));
  const std::vector<std::int64_t> first_cost = first_costs(graph);
  REQUIRE(first_cost[0] > 0);
  REQUIRE(first_cost[1] > 0);
  std::map<std::tuple<int, int>, int> seen;  // (processor, +1 slower / -1 faster): calls
  const auto predict = [&](const TaskGraph& g) {
    const std::vector<std::int64_t> cost = first_costs(g);
    int p = -1, way = 0;
    for (int q = 0; q < 2; ++q) {
      if (cost[static_cast<std::size_t>(q)] != first_cost[static_cast<std::size_t>(q)]) {
        CHECK(p == -1);  // one processor paced at a time
        p = q;
        way = cost[static_cast<std::size_t>(q)] > first_cost[static_cast<std::size_t>(q)] ? 1 : -1;
      }
    }
    ++seen[{p, way}];
    Result r;
    // p0 slower: 700 bytes on p1; p1 faster: 650 on p0; the others under the nominal 600.
    r.step_peak_memory_bytes = {500, 500};
    if (p == 0 && way == 1) r.step_peak_memory_bytes[1] = 700;
    if (p == 1 && way == -1) r.step_peak_memory_bytes[0] = 650;
    return r;
  };
  CHECK(step_peak_over_phases(graph, predict, 600, 0.25) == 700);
  CHECK(seen == std::map<std::tuple<int, int>, int>{{{0, 1}, 1}, {{0, -1}, 1}, {{1, 1}, 1}, {{1, -1}, 1}});
  seen.clear();
  CHECK(step_peak_over_phases(graph, predict, 800, 0.25) == 800);  // the nominal when it is the largest
  CHECK(step_peak_over_phases(graph, predict, 600, 0.0) == 600);
  const TaskGraph one = make_graph(graph_config("mlp", "1f1b", "cpu-core", 1, 2, 2));
  CHECK(step_peak_over_phases(one, predict, 600, 0.25) == 600);
  CHECK(seen.size() == 4);  // from the second call only: neither of the last two predicted
  CHECK_THROWS_AS(step_peak_over_phases(graph, predict, 600, 1.0), Error);
  CHECK_THROWS_AS(step_peak_over_phases(graph, predict, 600, -0.1), Error);
}

TEST_CASE("a step peak that hangs on the phase: the evaluator's largest over paced processors, as predicted one by one") {
  // resnet8, LayerPipe on 2 processors (roofline costs): a gradient's arrival against the
  // receiver's own task decides the step peak, and pacing a processor moves it.
  const TaskGraph graph = make_graph(graph_config("resnet8", "layerpipe", "cpu-core", 2, 4, 6));
  const auto predict = [](const TaskGraph& g) { return evaluate(g); };
  const std::int64_t nominal = max_peak(evaluate(graph).step_peak_memory_bytes);
  // The first fraction of these at which some pacing moves the peak.
  double fraction = 0;
  std::int64_t expected = nominal;
  for (const double f : {0.02, 0.05, 0.1, 0.2}) {
    for (const std::int32_t p : {0, 1}) {
      for (const double factor : {1 + f, 1 - f}) expected = std::max(expected, max_peak(evaluate(with_processor_paced(graph, p, factor)).step_peak_memory_bytes));
    }
    if (expected != nominal) {
      fraction = f;
      break;
    }
  }
  REQUIRE(fraction > 0);  // a race is there to find
  CHECK(expected > nominal);
  CHECK(step_peak_over_phases(graph, predict, nominal, fraction) == expected);
}

TEST_CASE("a table's task spread: the median task's distance from its like's median, over that median") {
  // mlp, sequential on one processor, 17 minibatches (the first left out). Within each group of
  // like tasks (kind, layers, processor) the durations go 100000, 102000, 96000, 106000 cycles in
  // turn, the same number of each: a group's (upper) median is 102000 and its tasks lie 0, 2000,
  // 4000 and 6000 cycles from it, so the median task lies 4000 / 102000 off (the upper median of
  // four equal quarters). The first minibatch's tasks, 10 times as long, are not counted.
  const GraphConfig config = graph_config("mlp", "sequential", "cpu-core", 1, 4, 17);
  const TaskGraph graph = make_graph(config);
  const Network network = make_request(config).network;
  TrainingRun run;
  run.result.tasks.assign(graph.tasks.size(), {});
  std::map<std::tuple<TaskKind, std::int32_t, std::int32_t, std::int32_t>, int> counted;
  const std::int64_t turn[] = {100000, 102000, 96000, 106000};
  std::int64_t now = 0;
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    const std::int64_t cycles = t.minibatch == 0 ? 1000000 : turn[counted[{t.kind, t.first_layer, t.last_layer, t.resource}]++ % 4];
    run.result.tasks[static_cast<std::size_t>(t.id)] = {now, now + cycles};
    now += cycles;
    run.layer_times.push_back({t.id, t.first_layer, t.kind, static_cast<double>(cycles) / graph.clock_hz, 0});
  }
  for (const auto& [group, count] : counted) REQUIRE(count % 4 == 0);
  const Calibration c = calibration_from_runs(graph, network, {run}, 1);
  CHECK(c.task_time_spread == doctest::Approx(4000.0 / 102000.0).epsilon(1e-12));
  // Like tasks all alike: no spread. A table from before the figure: not measured.
  TrainingRun even = run;
  for (const auto& t : graph.tasks) {
    if (t.placement == Placement::processor && t.minibatch > 0) {
      TaskTiming& time = even.result.tasks[static_cast<std::size_t>(t.id)];
      time.end_cycles = time.start_cycles + 100000;
    }
  }
  CHECK(calibration_from_runs(graph, network, {even}, 1).task_time_spread == 0);
  CHECK(Calibration{}.task_time_spread == -1);
}
