// ReLU; the backward passes the gradient where the forward's output is positive.
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

void relu_forward(Matrix& x) { x = x.cwiseMax(0.0f); }

Matrix relu_backward(const Matrix& output, const Matrix& dy) {
  return (output.array() > 0.0f).select(dy, 0.0f);
}

}  // namespace pipetwin::cpu
