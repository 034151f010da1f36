// Whether the CUDA tests can run here. Without a device they print the reason on stdout, which
// ctest turns into a "Skipped" with that reason (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt).
#pragma once
#include <iostream>
#include <string>

#include "pipetwin/exec/cuda/kernels.hpp"

namespace pipetwin::test {

inline bool have_gpu() {
  std::string reason;
  if (cuda::device_available(&reason)) return true;
  std::cout << "skipped: no CUDA device (" << reason << ")\n";
  return false;
}

}  // namespace pipetwin::test
