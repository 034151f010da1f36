// Tasks grouped by the wait before them on their processor (exec/common/wait_bins.hpp), against a
// timeline laid out by hand: the groups' edges, the order of a processor's tasks taken from their
// starts (not their ids), a processor's first task left out, links and uncounted tasks ignored.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "../exec/common/wait_bins.hpp"
#include "pipetwin/models/error.hpp"

using namespace pipetwin;
using exec::processor_cycles_by_wait;
using exec::wait_bin_label;

namespace {

// A task on `resource`, costing `cost` cycles.
Task task_on(std::int32_t id, Placement placement, std::int32_t resource, std::int64_t cost, std::int32_t minibatch = 1) {
  Task t;
  t.id = id;
  t.placement = placement;
  t.resource = resource;
  t.cost_cycles = cost;
  t.minibatch = minibatch;
  return t;
}

}  // namespace

TEST_CASE("wait groups: their edges at 0.5, 5 and 20 ms") {
  CHECK(wait_bin_label(-1e-3) == "wait < 0.5 ms");
  CHECK(wait_bin_label(0) == "wait < 0.5 ms");
  CHECK(wait_bin_label(0.49e-3) == "wait < 0.5 ms");
  CHECK(wait_bin_label(0.5e-3) == "wait 0.5-5 ms");
  CHECK(wait_bin_label(4.99e-3) == "wait 0.5-5 ms");
  CHECK(wait_bin_label(5e-3) == "wait 5-20 ms");
  CHECK(wait_bin_label(19.9e-3) == "wait 5-20 ms");
  CHECK(wait_bin_label(20e-3) == "wait >= 20 ms");
  CHECK(wait_bin_label(1.0) == "wait >= 20 ms");
}

TEST_CASE("tasks grouped by the wait before them on their processor, in the order they started") {
  // A clock of 10 kHz: a cycle is 0.1 ms.
  TaskGraph g;
  g.clock_hz = 1e4;
  g.processors.resize(2);
  g.links.resize(1);
  g.tasks = {
      task_on(0, Placement::processor, 0, 7),    // p0 [0, 10): its first, left out
      task_on(1, Placement::processor, 0, 11),   // p0 [10, 20): right after task 0, no wait
      task_on(2, Placement::processor, 0, 13),   // p0 [400, 410): 380 cycles = 38 ms after task 4
      task_on(3, Placement::processor, 1, 17),   // p1 [100, 110): its first, left out
      task_on(4, Placement::processor, 0, 19),   // p0 [30, 40): started before task 2, 1 ms after task 1
      task_on(5, Placement::link, 0, 23),        // a link's: not a processor task
      task_on(6, Placement::processor, 1, 29),   // p1 [170, 180): 6 ms after task 3
      task_on(7, Placement::processor, 1, 31, 0),  // p1 [181, 190): 0.1 ms after task 6, not counted
      task_on(8, Placement::processor, 1, 37),   // p1 [193, 200): 0.3 ms after task 7
  };
  Result run;
  run.tasks = {{0, 10}, {10, 20}, {400, 410}, {100, 110}, {30, 40}, {0, 500}, {170, 180}, {181, 190}, {193, 200}};
  const auto cycles = processor_cycles_by_wait(g, run, [](const Task& t) { return t.minibatch >= 1; });
  CHECK(cycles.size() == 4);
  CHECK(cycles.at("wait < 0.5 ms") == doctest::Approx(11 + 37));  // tasks 1 and 8 (task 7 uncounted)
  CHECK(cycles.at("wait 0.5-5 ms") == doctest::Approx(19));       // task 4
  CHECK(cycles.at("wait 5-20 ms") == doctest::Approx(29));        // task 6
  CHECK(cycles.at("wait >= 20 ms") == doctest::Approx(13));       // task 2

  run.tasks.pop_back();
  CHECK_THROWS_AS(processor_cycles_by_wait(g, run, [](const Task&) { return true; }), Error);
}
