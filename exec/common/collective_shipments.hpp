// Data parallelism across processes: which replicas' gradient sums each all-reduce step carries
// to another rank. In one process an all-reduce's steps only take their time (they move their
// bytes) and the first update to run sums every replica's gradients in rank order; across
// processes each rank sums the same gradients in the same order, so the sums must reach it. A
// step that crosses ranks carries the sums its rank holds when it starts (its own replica's, and
// those that earlier steps into its rank brought), less those its receiving rank holds already:
// over a ring of n ranks each step then carries one replica's sum, all of them in n - 1 steps.
// That is (n - 1) x the gradient's bytes from each rank where a ring all-reduce moves
// 2 (n - 1) / n x: the same at n = 2, more beyond (docs/distributed.md).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "graph_flow.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

// Per all-reduce step task that crosses ranks and carries something: the updates whose
// gradient sums it carries (in rank order). Throws, naming the all-reduce and the rank, when an
// update would run before every other rank's sum can have reached it (an all-reduce algorithm
// whose steps do not pass every sum along), or when a replica's gradients are summed on another
// rank than its update's.
std::map<std::int32_t, std::vector<std::int32_t>> plan_collective_shipments(const TaskGraph& graph, const GraphFlow& flow,
                                                                           const std::vector<std::int32_t>& task_rank,
                                                                           std::int32_t ranks);

}  // namespace pipetwin::exec
