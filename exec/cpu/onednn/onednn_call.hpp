// What every oneDNN kernel call needs: oneDNN's OpenMP parallelism held to the calling thread, and
// oneDNN's errors turned into pipetwin::Error naming the kernel. (A convolution's engine, stream
// and primitives are its plan's: plan.hpp.)
#pragma once
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu::onednn {

class Call {
 public:
  // `what` names the kernel in errors, e.g. "conv2d forward".
  explicit Call(const char* what) : what_(what) {
    omp_set_num_threads(1);  // this thread's own OpenMP setting: oneDNN runs on it alone
  }
  Error error(const dnnl::error& e) const { return Error(std::string(what_) + " (oneDNN): " + e.what()); }

 private:
  const char* what_;
};

}  // namespace pipetwin::cpu::onednn
