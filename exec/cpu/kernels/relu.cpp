// ReLU; the backward passes the gradient where the forward's output is positive. Plain loops
// that the compiler vectorizes (a blend, no branch: the sign of activations is random).
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

void relu_forward(float* v, std::int64_t size) {
  for (std::int64_t i = 0; i < size; ++i) v[i] = v[i] < 0.0f ? 0.0f : v[i];  // NaN stays NaN
}

void relu_backward(const float* output, const float* dy, float* dx, std::int64_t size) {
  for (std::int64_t i = 0; i < size; ++i) {
    const float gradient = dy[i];  // read unconditionally, so that the select vectorizes
    dx[i] = output[i] > 0.0f ? gradient : 0.0f;
  }
}

void relu_forward(Matrix& x) { relu_forward(x.data(), x.size()); }

Matrix relu_backward(const Matrix& output, const Matrix& dy, const Room& room) {
  Matrix dx = room.take(dy.rows(), dy.cols());
  relu_backward(output.data(), dy.data(), dx.data(), dy.size());
  return dx;
}

}  // namespace pipetwin::cpu
