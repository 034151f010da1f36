// Makes a GPU current for a scope and the thread's previous device current again after. Nothing
// is switched when it is current already (a green context then stays current), nor for a device
// below 0 (pinned host memory). `holds()` says whether the device is current (a caller that must
// have it throws when not).
#pragma once
#include <cuda_runtime.h>

namespace pipetwin::cuda {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device < 0 || cudaGetDevice(&previous_) != cudaSuccess) return;
    if (previous_ == device) {
      holds_ = true;
    } else if (cudaSetDevice(device) == cudaSuccess) {
      switched_ = holds_ = true;
    }
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  bool holds() const { return holds_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  bool holds_ = false;
};

}  // namespace pipetwin::cuda
