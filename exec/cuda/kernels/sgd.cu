// SGD update, optionally with momentum, as the CPU executor's: writes a new weight version.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void kernel(const float* w, const float* g, float* velocity, float* next, long long count, float lr,
                       float momentum) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  if (momentum > 0) {
    velocity[i] = momentum * velocity[i] + g[i];
    next[i] = w[i] - lr * velocity[i];
  } else {
    next[i] = w[i] - lr * g[i];
  }
}

}  // namespace

void sgd_update(Context& c, const float* w, const float* g, float* velocity, float* next, std::int64_t count,
                float learning_rate, float momentum) {
  kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(w, g, velocity, next, count, learning_rate, momentum);
  check_launch("sgd update");
}

}  // namespace pipetwin::cuda
