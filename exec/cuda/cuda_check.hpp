// Error checks for CUDA runtime and cuBLAS calls: a failure throws pipetwin::Error naming the call.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "pipetwin/exec/cuda/kernels.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {

struct Context::Impl {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t drained = nullptr;  // blocking waits: an event the host sleeps on (else it spins)
};

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS: ") + what + ": status " + std::to_string(static_cast<int>(status)));
}

// After a kernel launch: a bad configuration shows here, not at the next synchronisation.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

inline int blocks_for(long long count, int threads = 256) {
  return static_cast<int>((count + threads - 1) / threads);
}

}  // namespace pipetwin::cuda
