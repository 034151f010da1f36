// The validator: every registered schedule is valid; broken graphs get messages that say what is
// wrong and where.
#include <doctest/doctest.h>

#include <limits>

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

TEST_CASE("typed dependencies: what a dependency carries must fit both of its tasks") {
  SUBCASE("a dependency that carries what its producer does not make") {
    TaskGraph g = small_graph();
    const int b = find_task(g, TaskKind::B, 1, 0, 0);
    for (auto& d : g.tasks[b].deps) {
      if (d.carries == Carries::stash) d.carries = Carries::weight_gradient;
    }
    CHECK(first_problem(g).find("for weight-gradient, which that task does not produce") != std::string::npos);
  }
  SUBCASE("a forward after the first layer without its activation") {
    TaskGraph g = small_graph();
    const int f = find_task(g, TaskKind::F, 1, 0, 0);
    for (auto& d : g.tasks[f].deps) {
      if (d.carries == Carries::activation) d = {d.task, Carries::order, 0};
    }
    CHECK(first_problem(g).find("takes exactly one activation (it has 0)") != std::string::npos);
  }
  SUBCASE("a transfer that moves two things") {
    TaskGraph g = small_graph();
    for (auto it = g.tasks.rbegin(); it != g.tasks.rend(); ++it) {  // the last transfer, also fed by the first forward
      if (it->kind != TaskKind::X) continue;
      it->deps.push_back({find_task(g, TaskKind::F, 0, 0, 0), Carries::activation, it->bytes});
      break;
    }
    const std::string problem = first_problem(g);
    CAPTURE(problem);
    CHECK(problem.find("a transfer moves exactly one thing") != std::string::npos);
  }
  SUBCASE("an update with no weight gradient") {
    TaskGraph g = small_graph();
    const int u = find_task(g, TaskKind::U, 0, 0, -1);
    for (auto& d : g.tasks[u].deps) d = {d.task, Carries::order, 0};
    CHECK(first_problem(g).find("an update with no weight gradient to apply") != std::string::npos);
  }
  SUBCASE("an order-only dependency that carries bytes") {
    TaskGraph g = small_graph();
    g.tasks[find_task(g, TaskKind::U, 0, 0, -1)].deps.front() = {find_task(g, TaskKind::B, 0, 0, 0), Carries::order, 8};
    CHECK(first_problem(g).find("an order-only dependency carries bytes") != std::string::npos);
  }
}

TEST_CASE("in-order links take part in deadlock detection") {
  // Two transfers on one in-order link, ordered against their dependencies: the second one's data
  // is made only after the first one's consumer ran, which waits for the second one.
  TaskGraph g;
  g.processors = {{"p0", 1 << 20, 0, -1}, {"p1", 1 << 20, 0, -1}};
  g.links = {{"p0->p1", 0, 1, 1.0, 0, ""}};
  auto task = [&](TaskKind kind, Placement placement, std::int32_t resource, std::int32_t order, std::vector<Dep> deps) {
    Task t;
    t.id = static_cast<std::int32_t>(g.tasks.size());
    t.kind = kind;
    t.placement = placement;
    t.resource = resource;
    t.order = order;
    t.cost_cycles = 1;
    t.deps = std::move(deps);
    g.tasks.push_back(t);
    return t.id;
  };
  const int a = task(TaskKind::F, Placement::processor, 0, 0, {});
  const int second = task(TaskKind::X, Placement::link, 0, 0, {{a, Carries::order, 0}});  // runs first on the link
  const int c = task(TaskKind::F, Placement::processor, 1, 0, {{second, Carries::order, 0}});
  const int first = task(TaskKind::X, Placement::link, 0, 1, {{c, Carries::order, 0}});
  (void)first;
  CHECK(structural_problems(g).empty());
  CHECK_NOTHROW(execution_order(g, LinkOrders::ignore));
  CHECK_NOTHROW(evaluate(g));  // in order on the link, this one is fine: X(order 0) then X(order 1)
  // Swapping the link's order makes the link wait for a task that waits for the link.
  std::swap(g.tasks[static_cast<std::size_t>(second)].order, g.tasks[static_cast<std::size_t>(first)].order);
  CHECK_THROWS_WITH_AS(evaluate(g), doctest::Contains("in-order link"), Error);
  g.links[0].policy = LinkPolicy::shared;  // a shared link serves whichever is ready
  CHECK_NOTHROW(evaluate(g));
}

TEST_CASE("links that loop, lag backwards or carry nothing are named") {
  TaskGraph g = small_graph();
  REQUIRE(!g.links.empty());
  g.links[0].dst = g.links[0].src;
  CHECK(first_problem(g).find("with itself") != std::string::npos);
  g = small_graph();
  g.links[0].latency_cycles = -3;
  CHECK(first_problem(g).find("negative latency_cycles") != std::string::npos);
  g = small_graph();
  g.links[0].bytes_per_cycle = std::numeric_limits<double>::quiet_NaN();
  CHECK(first_problem(g).find("bytes_per_cycle must be a positive number") != std::string::npos);
}

TEST_CASE("buffers that name what does not exist are named") {
  TaskGraph g = small_graph();
  REQUIRE(!g.buffers.empty());
  g.buffers[0].freed_after.push_back(9999);
  CHECK(first_problem(g).find("freed after task 9999, which does not exist") != std::string::npos);
  g = small_graph();
  g.buffers[0].where = 5;
  CHECK(first_problem(g).find("held on unknown processor 5") != std::string::npos);
}
