// Which CUDA devices this process can use, and if none, why (no driver, no device, or a build
// without CUDA). Safe to call on machines without a GPU driver.
#pragma once
#include <string>
#include <vector>

namespace pipetwin {

struct CudaDevice {
  int index = 0;
  std::string name;
  int sm_count = 0;
  long long memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct CudaProbe {
  bool built_with_cuda = false;
  std::vector<CudaDevice> devices;
  std::string reason;  // why `devices` is empty
};

CudaProbe probe_cuda();

}  // namespace pipetwin
