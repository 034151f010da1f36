// Collectives as tasks over links (docs/design.md, "Collectives"): an all-reduce becomes X
// transfers, one per step and rank, each with its bytes and its dependencies, so that the engines
// time them on the links they use, with whatever else those links carry.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "link_tasks.hpp"

namespace pipetwin {

enum class CollectiveAlgorithm {
  ring,          // one ring over every rank: 2(n-1) steps of S/n bytes
  hierarchical,  // rings in each node (reduce-scatter, then all-gather) around rings across the
                 // nodes, one per position in the node, each over its S/g piece (2D, as NCCL's
                 // tree-less hierarchical and Horovod's)
};

CollectiveAlgorithm collective_algorithm_from_string(const std::string& text);  // throws on an unknown name
const char* to_string(CollectiveAlgorithm algorithm);
std::vector<std::string> collective_algorithm_names();

// One rank of an all-reduce: its processor and the task after which its contribution is complete
// (a weight-gradient producer on that processor).
struct AllReduceRank {
  std::int32_t processor = 0;
  std::int32_t ready_task = 0;
};

// The X tasks an all-reduce over `processors` (each rank's node by `cluster`) makes: what
// add_all_reduce would append, counted without building it.
std::int64_t all_reduce_steps(const ClusterSpec& cluster, CollectiveAlgorithm algorithm,
                              const std::vector<std::int32_t>& processors);

// Appends an all-reduce of `bytes` per rank to the graph (graph.collectives gets its record; every
// step is an X task on a link `links` makes, carrying weight gradients). Returns, per rank, the
// dependencies a task that needs the reduced gradients takes: the last step into the rank (data)
// and the rank's own last send (order). A single rank gets none.
std::vector<std::vector<Dep>> add_all_reduce(TaskGraph& graph, LinkTasks& links, const std::string& name,
                                             CollectiveAlgorithm algorithm, const std::vector<AllReduceRank>& ranks,
                                             std::int64_t bytes);

}  // namespace pipetwin
