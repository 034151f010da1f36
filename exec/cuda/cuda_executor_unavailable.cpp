// The CUDA executor's entry points in a build without nvcc: each says so.
#include "pipetwin/exec/cuda/cuda_executor.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {
Error not_built() {
  return Error("this pipetwin was built without CUDA (nvcc was not found at configure time); use --device cpu");
}
}  // namespace

TrainingRun run_cuda(const TaskGraph&, const Network&, const BatchSampler&, const TrainingOptions&,
                          const CudaOptions&, std::string*) {
  throw not_built();
}

Calibration profile_cuda(const GraphConfig&, const Dataset&, int, std::uint64_t, const CudaOptions&,
                         const std::function<void(const std::string&)>&, int, ConcurrentTiming) {
  throw not_built();
}

}  // namespace pipetwin::cuda
