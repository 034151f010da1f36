// The exact modulo scheduler: an integer program, solved by CBC (Debian's coinor-libcbc-dev), for
// the same problem as modulo_schedule() (modulo_scheduler.hpp): one iteration's tasks on P
// identical processors, one period T for all iterations. It minimises, in this order, the period,
// the bytes that cross between processors, and the memory the edges hold (`held_bytes` x the
// cycles from the start of the source to the end of the target). Every solve has a time limit;
// the answer is the best schedule found, with what is proven about it (bounds and gaps).
// docs/schedules/exact.md has the formulation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipetwin/schedule/modulo_scheduler.hpp"

namespace pipetwin {

struct ExactModuloOptions {
  double time_limit_s = 10;        // wall clock for the whole call, all solves together
  int max_nodes = 0;               // branch-and-bound nodes per solve, 0: no limit. Unlike the time
                                   // limit, a node limit gives the same schedule on every machine
  std::int64_t period_cycles = 0;  // 0: the least period; otherwise schedule at exactly this one
  bool minimise_bytes = true;      // second objective
  bool minimise_memory = true;     // third objective (at the bytes found)
  std::size_t max_rows = 100000;   // larger programs are not solved (CBC's first LP alone would
                                   // outlast the limits): the greedy schedule after local search
};

struct ExactModuloResult {
  ModuloSchedule schedule;               // the best found; its lower bounds as modulo_schedule's
  std::int64_t period_proven_lower_cycles = 0;  // no schedule has a smaller period (proven)
  bool period_optimal = false;           // schedule.period_cycles == period_proven_lower_cycles
  std::int64_t bytes = 0;                // bytes over the edges that cross, per iteration
  double bytes_lower_bound = 0;          // at this period (the solver's bound)
  bool bytes_optimal = false;
  double held_byte_cycles = 0;           // sum over edges of held_bytes x lifetime
  bool memory_optimal = false;
  std::int64_t heuristic_period_cycles = 0;  // modulo_schedule()'s, for comparison
  std::int64_t heuristic_bytes = 0;
  int solves = 0;                        // integer programs solved
  double solve_s = 0;                    // wall time spent
  bool time_limit_reached = false;
  std::size_t program_rows = 0;          // of the last program built
  bool too_large = false;                // over max_rows: not solved, proves nothing
};

// True when pipetwin was built with CBC; otherwise exact_modulo_schedule() throws.
bool exact_scheduler_available();

// Bytes over the edges whose ends run on different processors, per iteration.
std::int64_t modulo_cross_bytes(const ModuloSchedule& schedule, const std::vector<ModuloEdge>& edges);
// Sum over edges of held_bytes x (end of the target - start of the source), in byte-cycles.
double modulo_held_byte_cycles(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                               const std::vector<ModuloEdge>& edges);
// Throws Error naming the first violated dependency or processor overlap (a second check, by
// unrolling each processor's circle, independent of the integer program).
void check_modulo_schedule(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                           const std::vector<ModuloEdge>& edges, int processors);

// Preferred processors are ignored (they are the heuristic's hints); same_processor_as is kept.
// Throws when the solver is absent, or when no schedule is found at a requested period in time.
ExactModuloResult exact_modulo_schedule(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                                        int processors, const ExactModuloOptions& options = {});

}  // namespace pipetwin
