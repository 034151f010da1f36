// CUDA device probe through the runtime API (statically linked: libcuda.so.1 is loaded lazily,
// so a machine without a driver gets an error code here, not a failed program start).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "pipetwin/exec/cuda_probe.hpp"

namespace pipetwin {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.built_with_cuda = true;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without a driver the runtime reports "insufficient driver"; say what is really missing.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY);
    if (driver == nullptr) {
      probe.reason = "no NVIDIA driver on this machine (libcuda.so.1 not found)";
    } else {
      dlclose(driver);
      probe.reason = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    }
    return probe;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess) continue;
    probe.devices.push_back({i, props.name, props.multiProcessorCount,
                             static_cast<long long>(props.totalGlobalMem), props.major, props.minor});
  }
  if (probe.devices.empty()) probe.reason = "no CUDA device found";
  return probe;
}

}  // namespace pipetwin
