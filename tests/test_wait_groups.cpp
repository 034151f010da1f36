// Tasks grouped by the wait before them on their processor (exec/common/wait_groups.hpp), against a
// timeline laid out by hand: the groups' edges, the order of a processor's tasks taken from their
// starts (not their ids), a processor's first task and links in no group, an overlap no wait.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "../exec/common/wait_groups.hpp"
#include "pipetwin/models/error.hpp"

using namespace pipetwin;
using exec::wait_groups;
using exec::wait_group_label;

namespace {

Task task_on(std::int32_t id, Placement placement, std::int32_t resource) {
  Task t;
  t.id = id;
  t.placement = placement;
  t.resource = resource;
  return t;
}

}  // namespace

TEST_CASE("wait groups: their edges at 0.5, 5 and 20 ms") {
  CHECK(wait_group_label(-1e-3) == "wait < 0.5 ms");
  CHECK(wait_group_label(0) == "wait < 0.5 ms");
  CHECK(wait_group_label(0.49e-3) == "wait < 0.5 ms");
  CHECK(wait_group_label(0.5e-3) == "wait 0.5-5 ms");
  CHECK(wait_group_label(4.99e-3) == "wait 0.5-5 ms");
  CHECK(wait_group_label(5e-3) == "wait 5-20 ms");
  CHECK(wait_group_label(19.9e-3) == "wait 5-20 ms");
  CHECK(wait_group_label(20e-3) == "wait >= 20 ms");
  CHECK(wait_group_label(1.0) == "wait >= 20 ms");
}

TEST_CASE("tasks grouped by the wait before them on their processor, in the order they started") {
  // A clock of 10 kHz: a cycle is 0.1 ms.
  TaskGraph g;
  g.clock_hz = 1e4;
  g.processors.resize(2);
  g.links.resize(1);
  g.tasks = {
      task_on(0, Placement::processor, 0),  // p0 [0, 10): its first
      task_on(1, Placement::processor, 0),  // p0 [10, 20): right after task 0
      task_on(2, Placement::processor, 0),  // p0 [400, 410): 38 ms after task 4
      task_on(3, Placement::processor, 1),  // p1 [100, 110): its first
      task_on(4, Placement::processor, 0),  // p0 [30, 40): started before task 2, 1 ms after task 1
      task_on(5, Placement::link, 0),       // a link's
      task_on(6, Placement::processor, 1),  // p1 [170, 180): 6 ms after task 3
      task_on(7, Placement::processor, 1),  // p1 [181, 190): 0.1 ms after task 6
      task_on(8, Placement::processor, 1),  // p1 [193, 200): 0.3 ms after task 7, whose timing overlaps it
  };
  Result run;
  run.tasks = {{0, 10}, {10, 20}, {400, 410}, {100, 110}, {30, 40}, {0, 500}, {170, 180}, {181, 195}, {193, 200}};
  const std::vector<std::string> expected = {"",
                                             "wait < 0.5 ms",
                                             "wait >= 20 ms",
                                             "",
                                             "wait 0.5-5 ms",
                                             "",
                                             "wait 5-20 ms",
                                             "wait < 0.5 ms",
                                             "wait < 0.5 ms"};
  CHECK(wait_groups(g, run) == expected);

  run.tasks.pop_back();
  CHECK_THROWS_AS(wait_groups(g, run), Error);
}
