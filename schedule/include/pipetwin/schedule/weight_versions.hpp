// The one weight-version rule (docs/design.md, "Weight versions"): which version of its stage's
// weights every task reads, and which version an update writes, from the graph's semantics and
// its processors' orders. Generators assign versions with it; the validator checks a graph's
// declared versions against it; executors and references read the declared versions.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct WeightVersions {
  std::vector<std::int32_t> read;     // per task: the version it reads; -1 for none
  std::vector<std::int32_t> written;  // per task: U: the version it writes; -1 otherwise
  std::vector<std::int32_t> newest;   // per task: updates of its stage seen before it, walking
                                      // the processors' orders (the newest version at its home)
};

// The rule. Walking each processor's tasks in order (processors by index), the newest version of
// a stage is the number of its updates seen so far. Then, per semantics:
//   U                     reads the newest, writes newest + 1
//   F       delayed       max(0, n - weight_delay(stage)), n = minibatch x microbatches + microbatch
//           double-buffered  max(0, minibatch - 1)
//           otherwise     the newest
//   RC                    the version its forward (same stage, minibatch, microbatch) reads
//   B, BA, BW  stale      the newest
//           otherwise     the version its forward reads
WeightVersions weight_version_rule(const TaskGraph& graph);

// Sets every task's version_read and version_written by the rule.
void assign_weight_versions(TaskGraph& graph);

}  // namespace pipetwin
