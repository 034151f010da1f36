// JSON round trips (byte for byte) for every registered schedule, and DOT export.
#include <doctest/doctest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/views.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

TEST_CASE("every registered schedule round-trips through JSON byte for byte") {
  for (const auto& name : schedule_names()) {
    for (const std::string model : {"lenet5", "resnet20", "gpt"}) {
      for (const std::string hardware : {"unit", "h100", "cpu-core"}) {
        for (const int P : {1, 2, 3}) {
          GraphConfig config = test::graph_config(model, name, hardware, P, 2, 2);
          if (model == "gpt") config.params = {"layers=4", "seq=128", "batch=4"};
          config = test::with_schedule_file(config);
          CAPTURE(name);
          CAPTURE(model);
          CAPTURE(hardware);
          CAPTURE(P);
          const TaskGraph graph = make_graph(config);
          const std::string text = graph_to_json(graph);
          const TaskGraph back = graph_from_json(text, "graph.json");
          CHECK(graph_to_json(back) == text);
          CHECK(evaluate(back).total_cycles == evaluate(graph).total_cycles);
        }
      }
    }
  }
}

TEST_CASE("malformed graph JSON is a clear error") {
  CHECK_THROWS_WITH_AS(graph_from_json("{\"format\": ", "g.json"), doctest::Contains("g.json:1:"), Error);
  CHECK_THROWS_WITH_AS(graph_from_json(R"({"format": "other"})", "g.json"),
                       "g.json: /format: expected \"pipetwin.taskgraph\", got a string 'other'", Error);
  CHECK_THROWS_WITH_AS(graph_from_json(R"({"format": "pipetwin.taskgraph", "version": 3})", "g.json"),
                       "g.json: /: missing required key 'schedule'", Error);
  // Version 1 graphs had untyped dependencies, version 2 per-task memory effects: rejected,
  // saying what to do.
  CHECK_THROWS_WITH_AS(graph_from_json(R"({"format": "pipetwin.taskgraph", "version": 1})", "g.json"),
                       doctest::Contains("a version 1 task graph (untyped dependencies"), Error);
  CHECK_THROWS_WITH_AS(graph_from_json(R"({"format": "pipetwin.taskgraph", "version": 2})", "g.json"),
                       doctest::Contains("a version 2 task graph (per-task memory effects"), Error);
  CHECK_THROWS_WITH_AS(load_graph("/nonexistent/graph.json"),
                       "/nonexistent/graph.json: cannot open file", Error);
}

TEST_CASE("DOT export has a cluster per processor and every dependency edge") {
  const GraphConfig config = test::graph_config("lenet5", "gpipe", "unit", 2, 8, 2);
  const TaskGraph graph = make_graph(config);
  const std::string dot = graph_to_dot(graph);
  CHECK(dot.find("subgraph cluster_p0") != std::string::npos);
  CHECK(dot.find("subgraph cluster_p1") != std::string::npos);
  std::size_t edges = 0, deps = 0;
  for (std::size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) ++edges;
  for (const auto& task : graph.tasks) deps += task.deps.size();
  CHECK(edges == deps);
}

TEST_CASE("typed dependencies and link policies in JSON: kept, and bad ones named") {
  GraphConfig config = test::graph_config("lenet5", "1f1b", "h100", 2, 2, 1);
  config.params = {"hardware.link_policy=shared"};
  const TaskGraph graph = make_graph(config);
  REQUIRE(!graph.links.empty());
  CHECK(graph.links.front().policy == LinkPolicy::shared);
  const std::string text = graph_to_json(graph);
  const TaskGraph back = graph_from_json(text, "g.json");
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const auto& a = graph.tasks[i].deps;
    const auto& b = back.tasks[i].deps;
    REQUIRE(a.size() == b.size());
    for (std::size_t d = 0; d < a.size(); ++d) {
      CHECK(a[d].task == b[d].task);
      CHECK(a[d].carries == b[d].carries);
      CHECK(a[d].bytes == b[d].bytes);
    }
  }
  CHECK(back.links.front().policy == LinkPolicy::shared);
  // A link's wake and delivery parts are kept (absent: 0).
  CHECK(text.find("wake_cycles") == std::string::npos);
  TaskGraph split = graph;
  split.links.front().wake_cycles = 2;
  split.links.front().delivery_cycles = 3;
  const TaskGraph split_back = graph_from_json(graph_to_json(split), "g.json");
  CHECK(split_back.links.front().wake_cycles == 2);
  CHECK(split_back.links.front().delivery_cycles == 3);
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string edited = text;
    const auto at = edited.find(from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, from.size(), to);
    return edited;
  };
  CHECK_THROWS_WITH_AS(graph_from_json(broken("\"carries\":[\"stash\"]", "\"carries\":[\"stashed\"]"), "g.json"),
                       doctest::Contains("unknown dependency kind 'stashed'"), Error);
  CHECK_THROWS_WITH_AS(graph_from_json(broken("\"carries\":[\"stash\"]", "\"carries\":[]"), "g.json"),
                       doctest::Contains("one entry per dependency"), Error);
  CHECK_THROWS_WITH_AS(graph_from_json(broken("\"policy\":\"shared\"", "\"policy\":\"fifo\""), "g.json"),
                       doctest::Contains("unknown link policy 'fifo'"), Error);
}

TEST_CASE("Chrome traces: one result in processes 1 and 2, several overlaid in processes of their own") {
  const GraphConfig config = test::graph_config("lenet5", "gpipe", "unit", 2, 2, 1);
  const TaskGraph graph = make_graph(config);
  Result first = evaluate(graph, true);
  Result second = first;
  second.engine = "measured";
  const auto one = nlohmann::json::parse(chrome_trace_json(graph, first));
  const auto both = nlohmann::json::parse(chrome_trace_json(graph, {&first, &second}));
  std::set<int> pids_one, pids_both;
  std::size_t tasks_one = 0, tasks_both = 0;
  for (const auto& e : one["traceEvents"]) {
    pids_one.insert(e["pid"].get<int>());
    tasks_one += e["ph"] == "X" && e["cat"] != "bubble";
  }
  std::set<std::string> names;
  for (const auto& e : both["traceEvents"]) {
    pids_both.insert(e["pid"].get<int>());
    tasks_both += e["ph"] == "X" && e["cat"] != "bubble";
    if (e["name"] == "process_name") names.insert(e["args"]["name"].get<std::string>());
  }
  CHECK(pids_one == std::set<int>{1, 2});
  CHECK(pids_both == std::set<int>{1, 2, 3, 4});
  CHECK(tasks_one == graph.tasks.size());
  CHECK(tasks_both == 2 * graph.tasks.size());
  CHECK(names == std::set<std::string>{"processors (analytic)", "processors (measured)", "links (analytic)", "links (measured)"});
  CHECK(both["otherData"]["engine"] == nlohmann::json::array({"analytic", "measured"}));
}
