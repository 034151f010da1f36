// Modulo (software-pipelining) scheduling of one iteration's tasks on P identical processors:
// every iteration runs the same tasks at the same offsets, shifted by the period T, so a
// processor's timeline repeats with period T. Edges may span iterations (`distance`): the
// target of iteration n + distance waits for the source of iteration n. This is how
// LayerPipe's delayed gradients become overlap (docs/design.md, "Weight versions").
#pragma once
#include <cstdint>
#include <vector>

namespace pipetwin {

struct ModuloTask {
  std::int64_t cost_cycles = 0;
  int same_processor_as = -1;  // a task earlier in the list it must share a processor with
  std::vector<int> preferred_processors;  // where it should run if the period allows; empty: any
};

struct ModuloEdge {
  int from = 0;
  int to = 0;
  int distance = 0;                 // iterations between the source and the target
  std::int64_t cross_cycles = 0;    // extra wait when they run on different processors
  std::int64_t cross_bytes = 0;     // bytes moved when they do (placement tie-breaker)
  std::int64_t held_bytes = 0;      // memory kept from the source's start to the target's end
  // The source's processor's time to copy the data when they run on different processors (a CPU
  // whose every core runs a processor: the sender's thread makes the copy, copies_on_cores.hpp),
  // taken on that processor after the source ends and before the transfer; 0: the copy takes no
  // processor. Only the greedy placement reserves it (modulo_schedule, modulo_place_at); the
  // exact scheduler is given edges without it.
  std::int64_t sender_cycles = 0;
};

struct ModuloSchedule {
  std::int64_t period_cycles = 0;
  std::vector<int> processor;                // per task
  std::vector<std::int64_t> start_cycles;    // per task, iteration 0 (iteration n adds n x T)
  double iteration_bound_cycles = 0;         // max over loops of cost / distance
  std::int64_t processor_bound_cycles = 0;   // ceil(total cost / P), at least the largest task
  std::int64_t lower_bound_cycles = 0;       // max(ceil(iteration bound), processor bound)
};

// The largest cycle ratio (sum of task costs round a loop / sum of its distances) of the edges,
// transfers not counted; 0 without loops. Throws on a loop of distance 0 (a deadlock).
double iteration_bound_cycles(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges);

// Tasks must be listed so that distance-0 edges point forward. Tries periods from the lower bound
// up (step 1, growing by 0.2% once the steps are long) and returns the first one at which greedy
// placement meets every edge. Placement tries, in turn: preferred processors only, the one that
// moves the fewest bytes if that costs at most half a period of delay; preferred processors,
// earliest start; any processor, earliest start. A crossing edge with sender_cycles reserves that
// time on its source's processor (the first free slot after the source) and delays its target
// by it; a placement whose copies do not fit in the period is not taken.
ModuloSchedule modulo_schedule(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                               int processors);

// The bounds alone (iteration, processor and lower bound); period, processors and starts empty.
ModuloSchedule modulo_lower_bounds(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                                   int processors);

// The index of the first edge whose target (distance iterations later) starts before its source
// ends, plus the edge's sender's copy and transfer when they run on different processors; -1 when
// every edge is met.
int first_unmet_modulo_edge(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                            const std::vector<ModuloEdge>& edges);

// Greedy placement (as modulo_schedule's) at exactly `period_cycles`; false if it fails there.
bool modulo_place_at(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
                     std::int64_t period_cycles, ModuloSchedule& out);

}  // namespace pipetwin
