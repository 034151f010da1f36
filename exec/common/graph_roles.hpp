// What the executor needs to know about a task graph beyond the IR, computed once before a run:
// where each transfer's data comes from, which update each weight gradient feeds, how the
// activation gradient of a layer is split into parts, and how many tasks read each stash and
// each weight version (so each is freed after its last reader).
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

using StashKey = std::tuple<std::int32_t, std::int32_t, std::int32_t>;  // (first layer, minibatch, microbatch)

bool is_link_task(const Task& task);

struct GraphRoles {
  std::vector<std::int32_t> origin;                   // per task: itself, or a link task's compute source
  std::vector<std::vector<std::int32_t>> dependents;  // per task: tasks listing it in deps
  std::vector<std::int32_t> update_of;                // B / BW: the U applying its gradient, or -1
  std::vector<bool> accumulate_in_place;              // B / BW: its U runs on the same processor
  std::vector<std::int32_t> part_index, part_count;   // BA: its slice of the samples
  std::vector<bool> carries_stash;                    // link task: carries a forward's stash to a backward
  std::map<StashKey, std::int32_t> stash_readers;     // backward tasks per forward's stash
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> version_readers;  // (layer, version)
  std::vector<std::int32_t> newest_version;           // per layer
};

GraphRoles analyse_graph(const TaskGraph& graph, std::int32_t layer_count);

}  // namespace pipetwin::exec
