// The exact modulo scheduler (CBC) against brute force on small random graphs: the least period,
// then the fewest bytes at it, found by enumerating every processor assignment and every start
// residue (a second implementation that shares no code with the integer program); and against
// closed forms (the iteration bound, a chain's least lifetime, LayerPipe's least period on unit
// hardware).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/exact_modulo_scheduler.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

struct Problem {
  std::vector<ModuloTask> tasks;
  std::vector<ModuloEdge> edges;
  int processors = 1;
};

struct BruteForce {
  std::int64_t period = -1;
  std::int64_t bytes = std::numeric_limits<std::int64_t>::max();
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Do iteration offsets q exist with start = residue + q T meeting every edge? (no positive loop in
// q[to] - q[from] >= ceil((cost + cross - distance T + r[from] - r[to]) / T))
bool offsets_exist(const Problem& pb, const std::vector<int>& proc, const std::vector<std::int64_t>& r, std::int64_t T) {
  const std::size_t n = pb.tasks.size();
  std::vector<std::int64_t> q(n, 0);
  for (std::size_t round = 0; round <= n; ++round) {
    bool changed = false;
    for (const auto& e : pb.edges) {
      const std::int64_t cross = proc[e.from] != proc[e.to] ? e.cross_cycles : 0;
      const std::int64_t gap = ceil_div(pb.tasks[e.from].cost_cycles + cross - e.distance * T + r[e.from] - r[e.to], T);
      if (q[e.to] < q[e.from] + gap) {
        q[e.to] = q[e.from] + gap;
        changed = true;
      }
    }
    if (!changed) return true;
  }
  return false;
}

BruteForce brute_force(const Problem& pb, std::int64_t from_period, std::int64_t to_period) {
  const int n = static_cast<int>(pb.tasks.size());
  BruteForce best;
  for (std::int64_t T = from_period; T <= to_period && best.period < 0; ++T) {
    std::vector<int> proc(n, 0);
    for (bool more_procs = true; more_procs;) {
      bool partners_ok = true;
      for (int v = 0; v < n; ++v) {
        if (pb.tasks[v].same_processor_as >= 0 && proc[pb.tasks[v].same_processor_as] != proc[v]) partners_ok = false;
      }
      std::vector<std::int64_t> r(n, 0);
      for (bool more_r = partners_ok; more_r;) {
        // Occupancy of every processor's circle.
        std::vector<std::vector<int>> busy(pb.processors, std::vector<int>(T, 0));
        bool overlap = false;
        for (int v = 0; v < n && !overlap; ++v) {
          for (std::int64_t c = 0; c < pb.tasks[v].cost_cycles; ++c) {
            if (++busy[proc[v]][(r[v] + c) % T] > 1) overlap = true;
          }
        }
        if (!overlap && offsets_exist(pb, proc, r, T)) {
          std::int64_t bytes = 0;
          for (const auto& e : pb.edges) bytes += proc[e.from] != proc[e.to] ? e.cross_bytes : 0;
          best.period = T;
          best.bytes = std::min(best.bytes, bytes);
        }
        more_r = false;
        for (int v = 0; v < n && !more_r; ++v) {
          if (++r[v] < T) more_r = true; else r[v] = 0;
        }
      }
      more_procs = false;
      for (int v = 0; v < n && !more_procs; ++v) {
        if (++proc[v] < pb.processors) more_procs = true; else proc[v] = 0;
      }
    }
  }
  return best;
}

Problem random_problem(std::mt19937& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Problem pb;
  const int n = uniform(3, 4);
  pb.processors = uniform(1, 3);
  for (int v = 0; v < n; ++v) {
    ModuloTask t;
    t.cost_cycles = uniform(0, 3);
    if (v > 0 && uniform(0, 5) == 0) t.same_processor_as = uniform(0, v - 1);
    pb.tasks.push_back(t);
  }
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) {
      if (uniform(0, 9) < 5) pb.edges.push_back({u, v, 0, uniform(0, 2), uniform(0, 9)});
    }
    for (int v = 0; v <= u; ++v) {  // loops back to an earlier task of a later iteration
      if (uniform(0, 9) < 3) pb.edges.push_back({u, v, uniform(1, 3), uniform(0, 2), uniform(0, 9)});
    }
  }
  return pb;
}

}  // namespace

TEST_CASE("exact scheduler: least period and fewest bytes equal brute force on 40 random graphs") {
  if (!exact_scheduler_available()) {
    MESSAGE("skipped: no CBC (install coinor-libcbc-dev)");
    return;
  }
  std::mt19937 rng(20261124);
  int compared = 0, better_than_heuristic = 0;
  while (compared < 40) {
    const Problem pb = random_problem(rng);
    ModuloSchedule bounds;
    try {
      bounds = modulo_lower_bounds(pb.tasks, pb.edges, pb.processors);
    } catch (const Error&) {
      continue;  // a loop of distance 0
    }
    const BruteForce truth = brute_force(pb, bounds.lower_bound_cycles, bounds.lower_bound_cycles + 8);
    if (truth.period < 0) continue;
    ExactModuloOptions options;
    options.time_limit_s = 60;
    const ExactModuloResult exact = exact_modulo_schedule(pb.tasks, pb.edges, pb.processors, options);
    INFO("graph " << compared << ": " << pb.tasks.size() << " tasks, " << pb.edges.size() << " edges, P=" << pb.processors);
    CHECK(exact.period_optimal);
    CHECK(exact.bytes_optimal);
    CHECK(exact.schedule.period_cycles == truth.period);
    CHECK(exact.period_proven_lower_cycles == truth.period);
    CHECK(exact.bytes == truth.bytes);
    CHECK(exact.schedule.period_cycles >= bounds.lower_bound_cycles);
    CHECK_NOTHROW(check_modulo_schedule(exact.schedule, pb.tasks, pb.edges, pb.processors));
    if (exact.heuristic_period_cycles > 0) {
      CHECK(exact.schedule.period_cycles <= exact.heuristic_period_cycles);
      if (exact.schedule.period_cycles < exact.heuristic_period_cycles ||
          (exact.schedule.period_cycles == exact.heuristic_period_cycles && exact.bytes < exact.heuristic_bytes)) {
        ++better_than_heuristic;
      }
    }
    ++compared;
  }
  MESSAGE(better_than_heuristic << " of 40 graphs: exact beats the greedy heuristic in period or bytes");
}

TEST_CASE("exact scheduler: the iteration bound is reached when processors are plenty") {
  if (!exact_scheduler_available()) {
    MESSAGE("skipped: no CBC (install coinor-libcbc-dev)");
    return;
  }
  // A loop a -> b -> c -> a of distance 2 and cost 3 + 4 + 2 = 9: bound ceil(9 / 2) = 5 cycles,
  // with three processors and no transfer costs.
  std::vector<ModuloTask> tasks(3);
  tasks[0].cost_cycles = 3;
  tasks[1].cost_cycles = 4;
  tasks[2].cost_cycles = 2;
  const std::vector<ModuloEdge> edges{{0, 1, 0, 0, 0}, {1, 2, 0, 0, 0}, {2, 0, 2, 0, 0}};
  const ExactModuloResult exact = exact_modulo_schedule(tasks, edges, 3);
  CHECK(exact.schedule.period_cycles == 5);
  CHECK(exact.period_optimal);
  // One processor: the work bound, 9.
  CHECK(exact_modulo_schedule(tasks, edges, 1).schedule.period_cycles == 9);
}

TEST_CASE("exact scheduler: memory is the third objective (a chain's least lifetime)") {
  if (!exact_scheduler_available()) {
    MESSAGE("skipped: no CBC (install coinor-libcbc-dev)");
    return;
  }
  // a (2 cycles) -> b (3 cycles), 100 bytes held from a's start to b's end, one processor, the
  // period fixed at 20: least lifetime 2 + 3 = 5 cycles, 500 byte-cycles.
  std::vector<ModuloTask> tasks(2);
  tasks[0].cost_cycles = 2;
  tasks[1].cost_cycles = 3;
  ModuloEdge edge{0, 1, 0, 0, 0};
  edge.held_bytes = 100;
  ExactModuloOptions options;
  options.period_cycles = 20;
  const ExactModuloResult exact = exact_modulo_schedule(tasks, {edge}, 1, options);
  CHECK(exact.schedule.period_cycles == 20);
  CHECK(exact.memory_optimal);
  CHECK(exact.held_byte_cycles == doctest::Approx(500));
}

TEST_CASE("exact scheduler: a program over max_rows is not solved, the greedy schedule stands, said so") {
  if (!exact_scheduler_available()) {
    MESSAGE("skipped: no CBC (install coinor-libcbc-dev)");
    return;
  }
  std::vector<ModuloTask> tasks(4);
  for (auto& t : tasks) t.cost_cycles = 2;
  const std::vector<ModuloEdge> edges{{0, 1, 0, 1, 10}, {1, 2, 0, 1, 10}, {2, 3, 0, 1, 10}, {3, 0, 2, 0, 0}};
  ExactModuloOptions options;
  options.max_rows = 5;
  const ExactModuloResult r = exact_modulo_schedule(tasks, edges, 2, options);
  CHECK(r.too_large);
  CHECK(r.program_rows > 5);
  CHECK(r.solves == 0);
  CHECK_FALSE(r.time_limit_reached);
  CHECK(r.schedule.period_cycles == r.heuristic_period_cycles);
  CHECK(r.bytes <= r.heuristic_bytes);
  CHECK_NOTHROW(check_modulo_schedule(r.schedule, tasks, edges, 2));
}

TEST_CASE("exact scheduler: clear errors") {
  if (!exact_scheduler_available()) {
    CHECK_THROWS_WITH_AS(exact_modulo_schedule({}, {}, 1), doctest::Contains("coinor-libcbc-dev"), Error);
    return;
  }
  std::vector<ModuloTask> tasks(2);
  tasks[0].cost_cycles = 2;
  tasks[1].cost_cycles = 3;
  ExactModuloOptions options;
  options.period_cycles = 4;  // below the work bound of 5 on one processor
  CHECK_THROWS_WITH_AS(exact_modulo_schedule(tasks, {}, 1, options), doctest::Contains("lower bound is 5"), Error);
  CHECK_THROWS_AS(exact_modulo_schedule(tasks, {}, 0), Error);
}

TEST_CASE("layerpipe with scheduler=exact: the closed-form least period, proven, and no more bytes than greedy") {
  if (!exact_scheduler_available()) {
    MESSAGE("skipped: no CBC (install coinor-libcbc-dev)");
    return;
  }
  // unit hardware: F, BA and BW one cycle per layer (3 L of work), the greedy scheduler already
  // reaches max(iteration bound, ceil(work / P)) here (test_layerpipe.cpp); the exact one must
  // prove it least, valid, and move no more bytes than greedy.
  for (const auto& each_model_layers : {std::pair<std::string, int>{"mlp", 3}, {"lenet5", 5}}) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& model = each_model_layers.first;
    const auto& layers = each_model_layers.second;
    for (int P : {2, 5}) {
      GraphConfig config = test::graph_config(model, "layerpipe", "unit", P, 1, 4);
      config.params = {"scheduler=exact", "solve_nodes=50", "solve_seconds=60"};
      const TaskGraph g = make_graph(config);
      CAPTURE(model);
      CAPTURE(P);
      const auto& m = g.schedule_metrics;
      CHECK(m.at("period_cycles") == m.at("lower_bound_cycles"));
      CHECK(m.at("period_cycles") >= std::ceil(3.0 * layers / P));
      CHECK(m.at("period_optimal") == 1);
      CHECK(m.at("scheduled_bytes") <= m.at("greedy_bytes"));
      CHECK(validate(g).empty());
      // The same node-limited solve gives the same graph (but for the solve's wall time).
      TaskGraph first = g, again = make_graph(config);
      first.schedule_metrics.erase("solve_s");
      again.schedule_metrics.erase("solve_s");
      CHECK(graph_to_json(again) == graph_to_json(first));
    }
  }
  GraphConfig bad = test::graph_config("mlp", "layerpipe", "unit", 3, 1, 4);
  bad.params = {"period=4"};
  CHECK_THROWS_WITH_AS(make_graph(bad), doctest::Contains("need scheduler=exact"), Error);
  bad.params = {"scheduler=exact", "period=1"};
  CHECK_THROWS_WITH_AS(make_graph(bad), doctest::Contains("lower bound"), Error);
  bad.params = {"scheduler=optimal"};
  CHECK_THROWS_WITH_AS(make_graph(bad), doctest::Contains("not one of greedy, exact"), Error);
}
