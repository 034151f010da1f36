// CUDA device probe of a build configured without nvcc: there is nothing to run CUDA with.
#include "pipetwin/exec/cuda_probe.hpp"

namespace pipetwin {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.reason = "pipetwin was built without CUDA (nvcc was not found when it was configured)";
  return probe;
}

}  // namespace pipetwin
