// Backwards that assemble the gradient at their output from the slices of a split BA (LayerPipe's
// parts): the executors' rule (exec/common/graph_flow.cpp uses it), so that the cost model charges
// the assembly to the tasks that make it. A backward reading several activation-gradient slices,
// or one part of a split, fills a buffer of the whole microbatch's gradient from them. Backwards
// on one processor that read the same slices, made on that processor and read by them alone,
// share one assembly: the first of them in the processor's order makes it, the others read it.
// On the 2-vCPU AVX-512 machine (resnet8, LayerPipe at P = 2) the tasks that assembled spent
// 116-168 us beyond their layers, the others 2-12 us (docs/executor.md).
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

struct GradientAssemblies {
  // Per task: its group of backwards sharing one assembly, or -1.
  std::vector<std::int32_t> group;
  // Per group: how many tasks it has.
  std::vector<std::int32_t> group_tasks;
  // Per task: whether it assembles the gradient at its output from a split BA's slices (in a
  // group, its first task alone).
  std::vector<bool> assembles;
};

// The assemblies of `graph` over a network of `layer_count` layers (the last layer's backward
// makes its own gradient, from the loss).
GradientAssemblies gradient_assemblies(const TaskGraph& graph, std::int32_t layer_count);

// Adds to each task gradient_assemblies marks the calibration's assembly of the gradient at its
// last layer's output (LayerTimes::assembly_s), scaled to the graph's samples. Nothing without a
// calibration, or for a layer the calibration has no such time for.
void charge_gradient_assemblies(TaskGraph& graph, const HardwareProfile& hardware, const Network& network);

}  // namespace pipetwin
