// The CIFAR ResNet shortcut, option A: the block input subsampled by the stride, zero-padded to the
// output channels (input channels centred); the forward adds it to y, the backward extracts it.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__device__ long long source_row(const ShortcutShape& s, long long out_row) {
  const long long plane = static_cast<long long>(s.out_height) * s.out_width;
  const long long c = out_row / plane - (s.out_channels - s.in_channels) / 2;
  if (c < 0 || c >= s.in_channels) return -1;
  const int stride = s.in_height / s.out_height;
  const long long oy = (out_row % plane) / s.out_width, ox = out_row % s.out_width;
  return (c * s.in_height + oy * stride) * s.in_width + ox * stride;
}

__global__ void forward_add_kernel(ShortcutShape s, const float* x, float* y, int n) {
  const long long out_rows = static_cast<long long>(s.out_channels) * s.out_height * s.out_width;
  const long long in_rows = static_cast<long long>(s.in_channels) * s.in_height * s.in_width;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= out_rows * n) return;
  const long long r = source_row(s, i % out_rows);
  if (r >= 0) y[i] += x[(i / out_rows) * in_rows + r];
}

// dx is cleared first; every output row maps to at most one input row (no collisions).
__global__ void backward_kernel(ShortcutShape s, const float* dy, float* dx, int n) {
  const long long out_rows = static_cast<long long>(s.out_channels) * s.out_height * s.out_width;
  const long long in_rows = static_cast<long long>(s.in_channels) * s.in_height * s.in_width;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= out_rows * n) return;
  const long long r = source_row(s, i % out_rows);
  if (r >= 0) dx[(i / out_rows) * in_rows + r] = dy[i];
}

}  // namespace

void shortcut_forward_add(Context& c, const ShortcutShape& s, const float* x, float* y, int n) {
  const long long count = static_cast<long long>(s.out_channels) * s.out_height * s.out_width * n;
  forward_add_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(s, x, y, n);
  check_launch("shortcut forward");
}

void shortcut_backward(Context& c, const ShortcutShape& s, const float* dy, float* dx, int n) {
  const long long in_count = static_cast<long long>(s.in_channels) * s.in_height * s.in_width * n;
  check_cuda(cudaMemsetAsync(dx, 0, static_cast<std::size_t>(in_count) * sizeof(float), c.impl().stream), "memset");
  const long long count = static_cast<long long>(s.out_channels) * s.out_height * s.out_width * n;
  backward_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(s, dy, dx, n);
  check_launch("shortcut backward");
}

}  // namespace pipetwin::cuda
