// A graph laid out by hand whose processors wait (tests of schedule/wait_loss.hpp, both engines).
#pragma once
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::test {

inline Task processor_task(std::int32_t id, std::int32_t processor, std::int32_t order, std::int64_t cost,
                           std::vector<std::int32_t> deps, std::int64_t exposed_bytes) {
  Task t;
  t.id = id;
  t.kind = TaskKind::F;
  t.resource = processor;
  t.order = order;
  t.cost_cycles = cost;
  t.wait_exposed_bytes = exposed_bytes;
  for (const auto d : deps) t.deps.push_back({d, Carries::order, 0});
  return t;
}

// p0 runs A (10 cycles), D (40), E (3); p1 runs B (5, after A), C (5, after D); E follows C.
// The curve: 1 cycle a byte after a wait of 10 cycles, 3 after 30, from nothing at no wait.
inline TaskGraph waiting_graph() {
  TaskGraph g;
  g.schedule = "handmade";
  g.model = "none";
  g.hardware = "none";
  g.processors = {{"p0", 1000, 0}, {"p1", 1000, 0}};
  g.wait_loss = {{10, 1.0}, {30, 3.0}};
  g.tasks = {processor_task(0, 0, 0, 10, {}, 7),      // A
             processor_task(1, 1, 0, 5, {0}, 9),      // B: its processor's first task
             processor_task(2, 1, 1, 5, {3}, 4),      // C: waits for D
             processor_task(3, 0, 1, 40, {}, 100),    // D: right after A
             processor_task(4, 0, 2, 3, {2}, 10)};    // E: waits for C
  return g;
}

}  // namespace pipetwin::test
