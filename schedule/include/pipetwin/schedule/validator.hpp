// Checks a task graph and says what is wrong and where: references, orders, cycles (deadlock),
// typed data flow, forward before backward per microbatch, weight-version semantics, memory
// effects.
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// The problems that make a graph impossible to run at all: references to tasks, processors or
// links that do not exist, bad orders, negative costs (empty when it can run, perhaps into a
// deadlock). Engines check these before running a graph.
std::vector<std::string> structural_problems(const TaskGraph& graph);

// What every engine can represent exactly. Cycles: the sum of all task costs (a bound on any
// run's length) stays below 2^50, so that times summed in 64-bit integers never overflow, the
// simulator's bandwidth sharing (double precision, exact to 2^53) stays exact to the cycle, and
// SystemC's 64-bit clock, which never goes back within a process, lasts thousands of the longest
// runs. Bytes: every dependency, transfer and buffer, and their sum, below 2^60 (one exbibyte).
constexpr std::int64_t kMaxTotalCycles = std::int64_t{1} << 50;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 60;
// The first such problem, or "" (part of structural_problems; evaluators call it on their own).
std::string bounds_problem(const TaskGraph& graph);

// Every problem found, one message each (empty when the graph is valid).
std::vector<std::string> validate(const TaskGraph& graph);
// Throws Error with the first problems (and how many there are) when the graph is invalid.
void validate_or_throw(const TaskGraph& graph);

// Whether a topological order also follows the task orders of in-order links (engines), or
// leaves links unordered (generators, before they order the links).
enum class LinkOrders { follow, ignore };

// A topological order of all tasks over dependencies, processor orders and (by default) the
// orders of in-order links, or throws Error naming the tasks on a cycle ("deadlock").
std::vector<std::int32_t> execution_order(const TaskGraph& graph, LinkOrders link_orders = LinkOrders::follow);

}  // namespace pipetwin
