// Backward tasks that go back to a layer's linear output a second time, with its data still in
// the core's caches. A split BA and a BW each go back through
// pooling, ReLU and batch norm to the linear output before their own GEMM (cost_model.hpp,
// to_linear_cycles); LayerPipe's one-layer BA parts and BW each do it again. Where such a task
// runs right after another of its layer and microbatch on the same processor, the gradient and the
// stash it reads are the ones the previous task just read: on the 2-vCPU AVX-512 machine the way
// back of resnet8's convolutions took 93-520 us in LayerPipe's BWs against 137-856 us the first
// time (docs/executor.md, "Calibration").
#pragma once
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Per task: whether it is a BA or BW over one layer whose previous task on its processor (by
// order) was a BA or BW over the same layer, minibatch and microbatch, so that it goes back to
// that layer's linear output a second time.
std::vector<bool> repeats_to_linear(const TaskGraph& graph);

// Prices each task repeats_to_linear marks with its layer's calibrated way back taken again
// (LayerTimes::to_linear_again_s, for its kind) in place of taken the first time (to_linear_cycles). Nothing
// without a calibration, or for a layer the calibration has no such time for.
void charge_warm_to_linear(TaskGraph& graph, const HardwareProfile& hardware, const Network& network);

}  // namespace pipetwin
