// Max, average and global-average pooling without padding. The backward gathers, per input
// element, from the output windows that cover it (no atomics: deterministic).
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void forward_kernel(PoolShape s, const float* x, float* y, int* argmax, int n) {
  const int oh = s.out_height(), ow = s.out_width();
  const long long out_plane = static_cast<long long>(oh) * ow, in_plane = static_cast<long long>(s.height) * s.width;
  const long long out_rows = s.channels * out_plane, in_rows = s.channels * in_plane;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= out_rows * n) return;
  const long long sample = i / out_rows, row = i % out_rows;
  const long long c = row / out_plane, o = row % out_plane;
  const float* image = x + sample * in_rows;
  if (s.kind == PoolKind::global_avg) {
    float sum = 0;
    for (long long e = 0; e < in_plane; ++e) sum += image[c * in_plane + e];
    y[i] = sum / static_cast<float>(in_plane);
    return;
  }
  const int oy = static_cast<int>(o / ow), ox = static_cast<int>(o % ow);
  float best = -INFINITY, sum = 0;
  long long best_row = 0;
  for (int ky = 0; ky < s.kernel; ++ky) {
    for (int kx = 0; kx < s.kernel; ++kx) {
      const long long r = c * in_plane + static_cast<long long>(oy * s.stride + ky) * s.width + ox * s.stride + kx;
      const float v = image[r];
      sum += v;
      if (v > best) {
        best = v;
        best_row = r;
      }
    }
  }
  if (s.kind == PoolKind::max) {
    y[i] = best;
    if (argmax != nullptr) argmax[i] = static_cast<int>(best_row);
  } else {
    y[i] = sum / static_cast<float>(s.kernel * s.kernel);
  }
}

__global__ void backward_kernel(PoolShape s, const float* dy, const int* argmax, float* dx, int n) {
  const int oh = s.out_height(), ow = s.out_width();
  const long long out_plane = static_cast<long long>(oh) * ow, in_plane = static_cast<long long>(s.height) * s.width;
  const long long out_rows = s.channels * out_plane, in_rows = s.channels * in_plane;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= in_rows * n) return;
  const long long sample = i / in_rows, row = i % in_rows;
  const long long c = row / in_plane, e = row % in_plane;
  const float* g = dy + sample * out_rows;
  if (s.kind == PoolKind::global_avg) {
    dx[i] = g[c] / static_cast<float>(in_plane);
    return;
  }
  const int iy = static_cast<int>(e / s.width), ix = static_cast<int>(e % s.width);
  float sum = 0;
  // Output windows covering (iy, ix): oy in [ceil((iy - k + 1) / stride), iy / stride].
  const int oy_first = max(0, (iy - s.kernel + s.stride) / s.stride), oy_last = min(oh - 1, iy / s.stride);
  const int ox_first = max(0, (ix - s.kernel + s.stride) / s.stride), ox_last = min(ow - 1, ix / s.stride);
  for (int oy = oy_first; oy <= oy_last; ++oy) {
    if (iy - oy * s.stride >= s.kernel || iy < oy * s.stride) continue;
    for (int ox = ox_first; ox <= ox_last; ++ox) {
      if (ix - ox * s.stride >= s.kernel || ix < ox * s.stride) continue;
      const long long o = c * out_plane + static_cast<long long>(oy) * ow + ox;
      if (s.kind == PoolKind::max) {
        if (argmax[sample * out_rows + o] == row) sum += g[o];
      } else {
        sum += g[o] / static_cast<float>(s.kernel * s.kernel);
      }
    }
  }
  dx[i] = sum;
}

}  // namespace

void pool_forward(Context& c, const PoolShape& s, const float* x, float* y, int* argmax, int n) {
  const long long count = static_cast<long long>(s.channels) * s.out_height() * s.out_width() * n;
  forward_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(s, x, y, argmax, n);
  check_launch("pool forward");
}

void pool_backward(Context& c, const PoolShape& s, const float* dy, const int* argmax, float* dx, int n) {
  const long long count = static_cast<long long>(s.channels) * s.height * s.width * n;
  backward_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(s, dy, argmax, dx, n);
  check_launch("pool backward");
}

}  // namespace pipetwin::cuda
