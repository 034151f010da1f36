// Whether two task graphs are one program: what every processor and link runs, in what order,
// waiting on what, holding which buffers, whatever schedule named them. At one processor,
// sequential and 1f1b are (each microbatch's forward, then its backward, then the update):
// their runs differ only by the machine's noise, which a ranking must not read as an order.
#pragma once
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// True when `a` and `b` have the same processors, links and stages, and their tasks match one to
// one by (placement, resource, order): the same kind, layers, stage, minibatch, microbatch, costs,
// weight versions, bytes, part, collective step and dependencies (what each carries, from the
// matching task), and the same buffers (kind, place, bytes, owner, allocating and freeing tasks,
// matched alike). Names, parameters, schedule metrics and weight semantics (the tasks' versions
// say what they read) are not compared.
bool same_program(const TaskGraph& a, const TaskGraph& b);

}  // namespace pipetwin
