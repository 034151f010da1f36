// The CUDA executor (docs/design.md, "Executors"): the CPU executor's schedule semantics (the shared core in
// exec/common/graph_execution.hpp) with layers on cuBLAS and the project's kernels (fp32, TF32
// GEMMs as an option). A processor is an SM partition of one GPU (CUDA green contexts), a GPU of
// its own, or a plain stream; every processor and link has a host thread and a stream, a task
// starts when its dependencies have ended and ends when its stream has drained. Transfers are
// copies on the link's stream (device to device, peer, or to and from pinned host memory).
// Memory is tracked per processor as the CPU executor tracks it; a failed cudaMalloc is an
// error naming the GPU, not a crash. Plain C++: a build without CUDA has the same functions,
// which say so.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cuda {

struct CudaOptions {
  std::string placement = "partitions";  // partitions (green contexts) | gpus (one each) | streams
  int device = 0;                        // partitions / streams: the GPU
  int partition_sms = 0;                 // SMs per partition; 0: the largest equal share for P
  bool tf32 = false;                     // TF32 tensor-core GEMMs (labelled; fp32 otherwise)
  // How a host thread waits for its stream: spin (holds its core, the quickest wake) or block
  // (sleeps until the driver wakes it). Spinning was faster on an H100 machine with 16 CPUs even
  // with 22 threads (resnet56 on 8 partitions: 1f1b 66.7 ms a step against 76.0, layerpipe 80.2
  // against 101.6; docs/cuda-executor.md).
  std::string wait = "spin";
  // Across ranks (--distributed): how tensors travel between them. nccl: GPU to GPU (a GPU per
  // rank); mpi: through host memory (ranks may share a GPU); auto: nccl where it can run.
  std::string rank_link = "auto";
  // Profiling only: which tables fit the tasks' overheads from unmarked twins of the timed runs
  // (with_unmarked_twins, profiling.hpp; the layers' events cost host time that runs without them
  // do not pay): auto (the one-processor table), all or none (takes_unmarked_twins).
  std::string unmarked_twins = "auto";
};

// Runs `graph` on the GPU(s); `placement` (when not null) gets a line saying what ran where.
// Throws pipetwin::Error without a CUDA device, for a placement that does not fit, on memory
// beyond a processor's capacity or the GPU's, and on divergence.
TrainingRun run_cuda(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                          const TrainingOptions& training, const CudaOptions& options,
                          std::string* placement = nullptr);

// The calibration of `config`'s network on one processor as `options` places it (one SM
// partition, one GPU, or one stream): every layer's F, BA, BW and U timed inside a one-processor
// sequential run, the executor's cost per task, and the GPU's copy bandwidth and latency. With
// `concurrent` > 1, a table for that many processors, its layers timed as `timing` says: where a
// pipeline of that many runs them (profile_layers_in_pipeline: each stage's tasks on its own
// partition, with the overheads of tasks that span a stage), or as that many copies of the
// one-processor run at once, each on partitions of its own (same GPU, same host, same driver,
// every task spanning the whole network). A network with too few layers for that many stages is
// timed as copies.
Calibration profile_cuda(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                         const CudaOptions& options, const std::function<void(const std::string&)>& progress,
                         int concurrent = 1, ConcurrentTiming timing = ConcurrentTiming::pipeline);

}  // namespace pipetwin::cuda
