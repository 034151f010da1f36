// Time of one GPU kernel on the operator-level cost model (docs/cost-model.md, "operator"):
// GEMMs from how cuBLAS tiles them (tile and wave quantisation over the SMs, each tile's main loop
// limited by the tensor cores or by the L2 operand traffic its shape needs), memory-bound kernels
// as bytes over the achievable DRAM bandwidth, and every kernel at least the GPU's minimum kernel
// time. The host's per-kernel dispatch time is separate (operator_cost.cpp overlaps the two).
#pragma once
#include <string>

#include "pipetwin/models/hardware.hpp"

namespace pipetwin {

// C[m x n] = A[m x k] B[k x n], `batch` independent products, operands of `element_bytes`.
struct GemmShape {
  double m = 0, n = 0, k = 0, batch = 1;
};

// One kernel of a layer's task: a GEMM (shape set) or a memory-bound kernel (bytes set).
struct GpuKernel {
  std::string name;       // e.g. "qkv", "qkv.dgrad", "softmax"
  bool is_gemm = false;
  GemmShape gemm;         // GEMMs
  double causal = 1;      // fraction of the GEMM's tiles computed (0.5: a causal flash-attention)
  double bytes = 0;       // memory-bound kernels: bytes read and written
  double flops = 0;       // memory-bound kernels: element-wise FLOPs (checked against the FP32 peak)
};

// The cuBLAS tile a GEMM ran with, and its time; seconds include the minimum kernel time.
struct GemmTiming {
  int tile_m = 0, tile_n = 0;
  int split_k = 1;  // slices of K summed by a second pass (1: none)
  double waves = 0;
  double seconds = 0;
};

// Bytes a GEMM moves through DRAM at the least: A, B and C once each.
double gemm_dram_bytes(const GemmShape& shape, double element_bytes);

GemmTiming gemm_timing(const GpuSpec& gpu, const ProcessorSpec& p, const GemmShape& shape,
                       double element_bytes, double causal = 1);

// Seconds of one kernel on the GPU (no host dispatch).
double gpu_kernel_seconds(const GpuSpec& gpu, const ProcessorSpec& p, const GpuKernel& kernel,
                          double element_bytes);

}  // namespace pipetwin
