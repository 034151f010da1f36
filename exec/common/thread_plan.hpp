// Which host thread runs each task of a graph: one per processor, and one per in-order link unless
// its transfers run on the sending processor's thread (copies on senders), in which case each of
// them runs right after the task whose data it copies, in that processor's order.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::exec {

struct ThreadPlan {
  std::vector<std::vector<std::int32_t>> processor_orders;  // per processor: its tasks, and its senders' transfers
  std::vector<bool> link_has_thread;                        // per link: runs on threads of its own
  // Per task: the thread that runs it, as an index into processors, then links (its wake-up).
  std::vector<std::int32_t> runner;

  // Whether some transfer of `graph` runs on a link's thread of its own.
  bool runs_link_threads(const TaskGraph& graph) const;
};

// With `copies_on_senders`, the links that copied_after (copies_on_cores.hpp) allows
// hand their transfers to their sending processor's thread, each right after the last task it
// reads there (so the thread never waits on itself), in the link's order; other links keep their
// threads.
ThreadPlan plan_threads(const TaskGraph& graph, bool copies_on_senders);

}  // namespace pipetwin::exec
