// ReLU; the backward passes the gradient where the forward's output is positive. Plain loops that
// the compiler vectorizes (a blend, no branch: the sign of activations is random), one clone per
// vector ISA (vector_clones.hpp).
#include "pipetwin/exec/cpu/kernels.hpp"
#include "relu_loops.hpp"

namespace pipetwin::cpu {

PIPETWIN_VECTOR_CLONES
void relu_forward(float* v, std::int64_t size) {
  for (std::int64_t i = 0; i < size; ++i) v[i] = relu_of(v[i]);
}

PIPETWIN_VECTOR_CLONES
void relu_backward(const float* output, const float* dy, float* dx, std::int64_t size) {
  relu_mask(output, dy, dx, size);
}

void relu_forward(Matrix& x) { relu_forward(x.data(), x.size()); }

Matrix relu_backward(const Matrix& output, const Matrix& dy, const Room& room) {
  Matrix dx = room.take(dy.rows(), dy.cols());
  relu_backward(output.data(), dy.data(), dx.data(), dy.size());
  return dx;
}

}  // namespace pipetwin::cpu
