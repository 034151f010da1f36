// ReLU; the backward passes the gradient where the forward's output is positive. Plain loops
// that the compiler vectorizes (a blend, no branch: the sign of activations is random).
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

void relu_forward(Matrix& x) {
  float* v = x.data();
  const Eigen::Index size = x.size();
  for (Eigen::Index i = 0; i < size; ++i) v[i] = v[i] < 0.0f ? 0.0f : v[i];  // NaN stays NaN
}

Matrix relu_backward(const Matrix& output, const Matrix& dy) {
  Matrix dx(dy.rows(), dy.cols());
  const float* out = output.data();
  const float* g = dy.data();
  float* d = dx.data();
  const Eigen::Index size = dy.size();
  for (Eigen::Index i = 0; i < size; ++i) {
    const float gradient = g[i];  // read unconditionally, so that the select vectorizes
    d[i] = out[i] > 0.0f ? gradient : 0.0f;
  }
  return dx;
}

}  // namespace pipetwin::cpu
