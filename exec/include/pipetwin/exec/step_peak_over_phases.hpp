// A steady step's peak memory over the phases a run's processors can take against each other: the
// largest step peak an engine predicts for a graph with one processor's tasks a few percent slower
// or faster than their price. A step peak can hang on a race between a buffer's arrival and the
// receiving processor's own task (resnet8's LayerPipe and pipedream at P = 2, docs/executor.md,
// "Step peaks over phases"), which one simulated timing puts on one side and a run, whose tasks
// stray, reaches in some microbatch of many steps.
#pragma once
#include <cstdint>
#include <functional>

#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// `graph` with the cost (and the memory traffic within it) of every task on processor `processor`
// times `factor` (> 0), rounded up to whole cycles: that processor paced slower (factor > 1) or
// faster than its price. Links and the other processors keep theirs.
TaskGraph with_processor_paced(const TaskGraph& graph, std::int32_t processor, double factor);

// The largest over processors p of a graph's step peak (the largest of its processors'
// Result::step_peak_memory_bytes) predicted by `predict` with p's tasks times 1 + `fraction` and
// times 1 - `fraction`, and `nominal_bytes` (the step peak of `graph` as priced). With one
// processor, or `fraction` 0, `nominal_bytes`: there is no phase to shift. `fraction` in [0, 1).
std::int64_t step_peak_over_phases(const TaskGraph& graph, const std::function<Result(const TaskGraph&)>& predict,
                                   std::int64_t nominal_bytes, double fraction);

}  // namespace pipetwin
