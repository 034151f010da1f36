// The GPU kernels one layer's part of a task launches, as Megatron-LM and PyTorch launch them:
// each GEMM with its shape, each memory-bound kernel (layer norm, softmax, dropout, GELU, residual
// add, batch norm, ReLU, pooling, loss) with its bytes. The operator-level cost model times them
// (gpu_timing.hpp); docs/cost-model.md lists them per layer type.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/models/gpu_timing.hpp"
#include "pipetwin/models/layer.hpp"
#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

// Kernels of `layer`'s part of a task of `kind` (F, RC, BA or BW; B is BA then BW) for `samples`
// samples, activations and weights of `element_bytes`. Empty when the part does nothing (the
// network's first layer has no activation gradient).
std::vector<GpuKernel> layer_kernels(const Layer& layer, TaskKind kind, std::int64_t samples,
                                     std::int64_t element_bytes);

// Framework operators the host runs for that part (Python, autograd and dispatcher work, each
// GPU profile's dispatch_s apiece): a GPT block's counts are those experiments/validation/
// host_overhead.py records for a Megatron-LM layer (forward 58 ATen operators, backward 90, split
// between BA and BW in proportion to their kernels, 17 and 9); other layers run one operator per kernel.
double layer_host_operators(const Layer& layer, TaskKind kind, std::size_t kernels);

// Host seconds of a layer's part of a task that launches `kernels` kernels: its framework
// operators at dispatch_s each, and a launch_s per kernel.
double layer_host_seconds(const GpuSpec& gpu, const Layer& layer, TaskKind kind, std::size_t kernels);

}  // namespace pipetwin
