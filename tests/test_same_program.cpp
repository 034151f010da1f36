// same_program: two graphs are one program when every resource runs the same tasks in the same
// order, waiting on the same tasks and holding the same buffers; ids and schedule names do not
// matter, any field of a task or a buffer does.
#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/same_program.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

TaskGraph graph_of(const std::string& schedule, int processors, const std::string& model = "lenet5") {
  return make_graph(test::graph_config(model, schedule, "unit", processors, 4, 2));
}

// Each processor's tasks in order, by kind, minibatch and microbatch: a second, plainer account of
// what a processor runs.
std::vector<std::vector<std::tuple<int, int, int>>> processor_sequences(const TaskGraph& g) {
  std::vector<std::vector<std::tuple<int, int, int, int>>> ordered(g.processors.size());
  for (const Task& t : g.tasks) {
    if (t.placement == Placement::processor) {
      ordered.at(static_cast<std::size_t>(t.resource)).emplace_back(t.order, static_cast<int>(t.kind), t.minibatch, t.microbatch);
    }
  }
  std::vector<std::vector<std::tuple<int, int, int>>> out;
  for (auto& tasks : ordered) {
    std::sort(tasks.begin(), tasks.end());
    out.emplace_back();
    for (const auto& [order, kind, minibatch, microbatch] : tasks) out.back().emplace_back(kind, minibatch, microbatch);
  }
  return out;
}

// The same graph with its task ids in reverse: every reference renumbered.
TaskGraph renumbered(TaskGraph g) {
  const auto n = static_cast<std::int32_t>(g.tasks.size());
  const auto id = [n](std::int32_t old) { return old < 0 ? old : n - 1 - old; };
  for (Task& t : g.tasks) {
    t.id = id(t.id);
    for (Dep& d : t.deps) d.task = id(d.task);
  }
  std::reverse(g.tasks.begin(), g.tasks.end());
  for (Buffer& b : g.buffers) {
    b.name.owner = id(b.name.owner);
    b.allocated_by = id(b.allocated_by);
    for (auto& f : b.freed_after) f = id(f);
  }
  return g;
}

}  // namespace

TEST_CASE("same_program: at one processor sequential and 1f1b are one program, gpipe and pipedream are not") {
  const TaskGraph sequential = graph_of("sequential", 1), one_f_one_b = graph_of("1f1b", 1);
  const TaskGraph gpipe = graph_of("gpipe", 1), pipedream = graph_of("pipedream", 1);
  // What each processor runs, told plainly: alike for the first two, not for gpipe.
  REQUIRE(processor_sequences(sequential) == processor_sequences(one_f_one_b));
  REQUIRE(processor_sequences(sequential) != processor_sequences(gpipe));
  CHECK(same_program(sequential, one_f_one_b));
  CHECK(same_program(one_f_one_b, sequential));
  CHECK_FALSE(same_program(sequential, gpipe));
  CHECK_FALSE(same_program(one_f_one_b, pipedream));  // an update per microbatch
  // At two processors 1f1b interleaves where gpipe does not.
  CHECK_FALSE(same_program(graph_of("1f1b", 2), graph_of("gpipe", 2)));
  CHECK(same_program(graph_of("1f1b", 2), graph_of("1f1b", 2)));
  // Another network: not the same program.
  CHECK_FALSE(same_program(sequential, graph_of("sequential", 1, "mlp")));
}

TEST_CASE("same_program: ids do not matter, every field does") {
  const TaskGraph g = graph_of("1f1b", 2);
  CHECK(same_program(g, renumbered(g)));
  CHECK(same_program(renumbered(g), g));

  const auto first_of = [](TaskGraph& graph, TaskKind kind) -> Task& {
    return *std::find_if(graph.tasks.begin(), graph.tasks.end(), [kind](const Task& t) { return t.kind == kind; });
  };
  TaskGraph costlier = g;
  first_of(costlier, TaskKind::B).cost_cycles += 1;
  CHECK_FALSE(same_program(g, costlier));

  TaskGraph other_version = g;
  first_of(other_version, TaskKind::F).version_read += 1;
  CHECK_FALSE(same_program(g, other_version));

  TaskGraph carries_other = g;
  Task& b = first_of(carries_other, TaskKind::B);
  REQUIRE_FALSE(b.deps.empty());
  b.deps.front().carries = b.deps.front().carries == Carries::order ? Carries::stash : Carries::order;
  CHECK_FALSE(same_program(g, carries_other));

  TaskGraph bigger_buffer = g;
  REQUIRE_FALSE(bigger_buffer.buffers.empty());
  bigger_buffer.buffers.back().bytes += 4;
  CHECK_FALSE(same_program(g, bigger_buffer));

  // Two tasks of one processor swapped in its order.
  TaskGraph swapped = g;
  std::vector<Task*> on_p0;
  for (Task& t : swapped.tasks) {
    if (t.placement == Placement::processor && t.resource == 0) on_p0.push_back(&t);
  }
  std::sort(on_p0.begin(), on_p0.end(), [](const Task* x, const Task* y) { return x->order < y->order; });
  std::swap(on_p0.at(1)->order, on_p0.at(2)->order);
  CHECK_FALSE(same_program(g, swapped));

  TaskGraph slower_link = g;
  REQUIRE_FALSE(slower_link.links.empty());
  slower_link.links.front().latency_cycles += 1;
  CHECK_FALSE(same_program(g, slower_link));
}
