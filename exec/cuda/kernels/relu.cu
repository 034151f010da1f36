// ReLU in place; the backward passes the gradient where the forward's output is positive.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void forward_kernel(float* x, long long count) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < count) x[i] = fmaxf(x[i], 0.0f);
}

__global__ void backward_kernel(const float* output, const float* dy, float* dx, long long count) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < count) dx[i] = output[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace

void relu_forward(Context& c, float* x, std::int64_t count) {
  forward_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(x, count);
  check_launch("relu forward");
}

void relu_backward(Context& c, const float* output, const float* dy, float* dx, std::int64_t count) {
  backward_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(output, dy, dx, count);
  check_launch("relu backward");
}

}  // namespace pipetwin::cuda
