// The validator: every registered schedule is valid; broken graphs get messages that say what is
// wrong and where.
#include <doctest/doctest.h>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

TaskGraph small_graph(const std::string& schedule = "gpipe") {
  GraphConfig config = test::graph_config("lenet5", schedule, "unit", 2, 2, 2);
  return make_graph(config);
}

std::string first_problem(const TaskGraph& graph) {
  const auto problems = validate(graph);
  return problems.empty() ? "" : problems.front();
}

int find_task(const TaskGraph& g, TaskKind kind, int stage, int minibatch, int microbatch) {
  for (const auto& t : g.tasks) {
    if (t.kind == kind && t.stage == stage && t.minibatch == minibatch && t.microbatch == microbatch) return t.id;
  }
  FAIL("task not found");
  return -1;
}

}  // namespace

TEST_CASE("every registered schedule is valid for P = 1..9 on three networks") {
  for (const auto& name : schedule_names()) {
    for (const auto& model : test::conformance_models()) {
      for (int P = 1; P <= 9; ++P) {
        const GraphConfig config = test::conformance_config(name, model, "h100", P);
        CAPTURE(name);
        CAPTURE(model);
        CAPTURE(P);
        const TaskGraph graph = make_graph(config);
        const auto problems = validate(graph);
        CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
        CHECK(evaluate(graph).total_cycles > 0);
      }
    }
  }
}

TEST_CASE("a cycle is reported as a deadlock naming the tasks on it") {
  TaskGraph g = small_graph();
  // The first forward of processor 0 waits for the last backward of processor 0: a cycle.
  const int f = find_task(g, TaskKind::F, 0, 0, 0);
  const int b = find_task(g, TaskKind::B, 0, 0, 1);
  g.tasks[f].deps.push_back({b, Carries::order, 0});
  const std::string problem = first_problem(g);
  CHECK(problem.find("deadlock") == 0);
  CHECK(problem.find("F(k0,m0,s0)") != std::string::npos);
  CHECK_THROWS_WITH_AS(evaluate(g), doctest::Contains("deadlock"), Error);
}

TEST_CASE("a missing dependency is named") {
  TaskGraph g = small_graph();
  g.tasks[3].deps.push_back({9999, Carries::order, 0});
  CHECK(first_problem(g).find("depends on task 9999, which does not exist") != std::string::npos);
}

TEST_CASE("an unknown processor is named") {
  TaskGraph g = small_graph();
  g.tasks[0].resource = 7;
  CHECK(first_problem(g) == "task 0 F(k0,m0,s0) on processor 7: unknown processor 7 (the graph has 2)");
}

TEST_CASE("backward before forward is caught") {
  TaskGraph g = small_graph();
  // The last stage's backward loses its dependency on its forward; processor order still runs
  // the forward first, but nothing says the backward needs it.
  const int b = find_task(g, TaskKind::B, 1, 0, 0);
  g.tasks[b].deps.clear();
  CHECK(first_problem(g).find("backward before forward") != std::string::npos);
}

TEST_CASE("version semantics violations are caught") {
  SUBCASE("synchronous: a forward reading a stale version") {
    TaskGraph g = small_graph("1f1b");
    g.tasks[find_task(g, TaskKind::F, 0, 1, 0)].version_read = 0;
    CHECK(first_problem(g).find("violates synchronous semantics") != std::string::npos);
  }
  SUBCASE("stashed: a backward not reading its forward's version") {
    TaskGraph g = small_graph("pipedream");
    g.tasks[find_task(g, TaskKind::B, 0, 1, 1)].version_read += 1;
    CHECK(first_problem(g).find("a backward reads its forward's version") != std::string::npos);
  }
  SUBCASE("an update skipping a version") {
    TaskGraph g = small_graph("gpipe");
    g.tasks[find_task(g, TaskKind::U, 1, 0, -1)].version_written = 5;
    CHECK(first_problem(g).find("update must read version 0 and write 1") != std::string::npos);
  }
}

TEST_CASE("duplicate orders on a processor are caught") {
  TaskGraph g = small_graph();
  g.tasks[1].order = g.tasks[0].order;
  CHECK(first_problem(g).find("order") != std::string::npos);
}
