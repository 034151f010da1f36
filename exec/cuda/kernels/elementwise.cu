// Element-wise sums: accumulating weight gradients and adding a residual's gradient.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void add_into_kernel(const float* x, float* y, long long count) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] += x[i];
}

}  // namespace

void add_into(Context& c, const float* x, float* y, std::int64_t count) {
  if (count <= 0) return;
  add_into_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(x, y, count);
  check_launch("add_into");
}

}  // namespace pipetwin::cuda
