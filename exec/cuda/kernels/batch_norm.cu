// Batch normalization with the microbatch's statistics: one block per channel reduces over its
// positions and samples (in double, as the CPU kernel does), then normalizes.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

constexpr int kThreads = 256;

// Sums a and b over the block; thread 0 ends with the totals in shared[0] and shared[kThreads].
__device__ void block_sum2(double a, double b, double* shared) {
  shared[threadIdx.x] = a;
  shared[kThreads + threadIdx.x] = b;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      shared[threadIdx.x] += shared[threadIdx.x + stride];
      shared[kThreads + threadIdx.x] += shared[kThreads + threadIdx.x + stride];
    }
    __syncthreads();
  }
}

__global__ void forward_kernel(int channels, int positions, int n, const float* gamma, const float* beta,
                               const float* z, float* y, float* xhat, float* inv_std, float epsilon) {
  __shared__ double shared[2 * kThreads];
  const int c = blockIdx.x;
  const long long count = static_cast<long long>(positions) * n;
  auto at = [&](long long i) { return (i / positions) * channels * positions + static_cast<long long>(c) * positions + i % positions; };
  double sum = 0;
  for (long long i = threadIdx.x; i < count; i += kThreads) sum += z[at(i)];
  block_sum2(sum, 0, shared);
  const double mean = shared[0] / static_cast<double>(count);
  __syncthreads();
  double squares = 0;
  for (long long i = threadIdx.x; i < count; i += kThreads) {
    const double d = z[at(i)] - mean;
    squares += d * d;
  }
  block_sum2(squares, 0, shared);
  const float inv = static_cast<float>(1.0 / sqrt(shared[0] / static_cast<double>(count) + epsilon));
  if (threadIdx.x == 0) inv_std[c] = inv;
  for (long long i = threadIdx.x; i < count; i += kThreads) {
    const float normalized = (z[at(i)] - static_cast<float>(mean)) * inv;
    xhat[at(i)] = normalized;
    y[at(i)] = normalized * gamma[c] + beta[c];
  }
}

__global__ void backward_kernel(int channels, int positions, int n, const float* gamma, const float* xhat,
                                const float* inv_std, const float* dy, float* dz, float* dgamma, float* dbeta,
                                bool add) {
  __shared__ double shared[2 * kThreads];
  const int c = blockIdx.x;
  const long long count = static_cast<long long>(positions) * n;
  auto at = [&](long long i) { return (i / positions) * channels * positions + static_cast<long long>(c) * positions + i % positions; };
  double sum_dy = 0, sum_dy_xhat = 0;
  for (long long i = threadIdx.x; i < count; i += kThreads) {
    sum_dy += dy[at(i)];
    sum_dy_xhat += static_cast<double>(dy[at(i)]) * xhat[at(i)];
  }
  block_sum2(sum_dy, sum_dy_xhat, shared);
  const float a = static_cast<float>(shared[0]), b = static_cast<float>(shared[kThreads]);
  if (threadIdx.x == 0) {
    if (dgamma != nullptr) dgamma[c] = add ? dgamma[c] + b : b;
    if (dbeta != nullptr) dbeta[c] = add ? dbeta[c] + a : a;
  }
  const float N = static_cast<float>(count);
  const float scale = gamma[c] * inv_std[c] / N;
  for (long long i = threadIdx.x; i < count; i += kThreads) {
    dz[at(i)] = (dy[at(i)] * N - a - xhat[at(i)] * b) * scale;
  }
}

}  // namespace

void batch_norm_forward(Context& c, int channels, int positions, int n, const float* gamma, const float* beta,
                        const float* z, float* y, float* xhat, float* inv_std) {
  forward_kernel<<<channels, kThreads, 0, c.impl().stream>>>(channels, positions, n, gamma, beta, z, y, xhat, inv_std,
                                                              1e-5f);
  check_launch("batch_norm forward");
}

void batch_norm_backward(Context& c, int channels, int positions, int n, const float* gamma, const float* xhat,
                         const float* inv_std, const float* dy, float* dz, float* dgamma, float* dbeta,
                         bool add) {
  backward_kernel<<<channels, kThreads, 0, c.impl().stream>>>(channels, positions, n, gamma, xhat, inv_std, dy, dz,
                                                               dgamma, dbeta, add);
  check_launch("batch_norm backward");
}

}  // namespace pipetwin::cuda
