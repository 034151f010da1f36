// 2-D convolution as im2col + one cuBLAS GEMM per microbatch, the CPU executor's layout: patches
// stored transposed [n*Ho*Wo x C*k*k], so patches * W^T is [n*Ho*Wo x Cout], rearranged into the
// [Cout*Ho*Wo x n] activation. The col2im of the backward gathers (no atomics: deterministic).
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

struct Geometry {
  int C, H, W, Cout, k, stride, pad, Ho, Wo;
  PIPETWIN_HOST_DEVICE long long positions() const { return static_cast<long long>(Ho) * Wo; }
};

Geometry geometry(const ConvShape& s) {
  return {s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.padding, s.out_height(), s.out_width()};
}

// cols[q * rows + r], r = sample * positions + (oy * Wo + ox), q = (c * k + kh) * k + kw.
__global__ void im2col_kernel(Geometry g, const float* x, float* cols, int n) {
  const long long rows = g.positions() * n;
  const long long patch = static_cast<long long>(g.C) * g.k * g.k;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= rows * patch) return;
  const long long r = i % rows, q = i / rows;
  const long long s = r / g.positions(), p = r % g.positions();
  const int oy = static_cast<int>(p / g.Wo), ox = static_cast<int>(p % g.Wo);
  const int c = static_cast<int>(q / (g.k * g.k)), kh = static_cast<int>((q / g.k) % g.k), kw = static_cast<int>(q % g.k);
  const int iy = oy * g.stride - g.pad + kh, ix = ox * g.stride - g.pad + kw;
  float value = 0;
  if (iy >= 0 && iy < g.H && ix >= 0 && ix < g.W) value = x[s * g.C * g.H * g.W + (static_cast<long long>(c) * g.H + iy) * g.W + ix];
  cols[i] = value;
}

// dx[s, c, iy, ix] = sum over (kh, kw) of dcols at the output position that read it.
__global__ void col2im_kernel(Geometry g, const float* dcols, float* dx, int n) {
  const long long image = static_cast<long long>(g.C) * g.H * g.W;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= image * n) return;
  const long long s = i / image, e = i % image;
  const int c = static_cast<int>(e / (g.H * g.W)), iy = static_cast<int>((e / g.W) % g.H), ix = static_cast<int>(e % g.W);
  const long long rows = g.positions() * n;
  float sum = 0;
  for (int kh = 0; kh < g.k; ++kh) {
    const int ty = iy + g.pad - kh;
    if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.Ho) continue;
    for (int kw = 0; kw < g.k; ++kw) {
      const int tx = ix + g.pad - kw;
      if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.Wo) continue;
      const long long r = s * g.positions() + static_cast<long long>(ty / g.stride) * g.Wo + tx / g.stride;
      const long long q = (static_cast<long long>(c) * g.k + kh) * g.k + kw;
      sum += dcols[q * rows + r];
    }
  }
  dx[i] = sum;
}

// rows [n*P x Cout] (+ bias) -> z [Cout*P x n], and back.
__global__ void rows_to_columns_kernel(Geometry g, const float* rows, const float* b, float* z, int n) {
  const long long count = g.positions() * g.Cout * n;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const long long per_sample = g.positions() * g.Cout;
  const long long s = i / per_sample, e = i % per_sample;
  const long long c = e / g.positions(), p = e % g.positions();
  z[i] = rows[c * g.positions() * n + s * g.positions() + p] + (b != nullptr ? b[c] : 0.0f);
}

__global__ void columns_to_rows_kernel(Geometry g, const float* z, float* rows, int n) {
  const long long count = g.positions() * g.Cout * n;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const long long per_sample = g.positions() * g.Cout;
  const long long s = i / per_sample, e = i % per_sample;
  const long long c = e / g.positions(), p = e % g.positions();
  rows[c * g.positions() * n + s * g.positions() + p] = z[i];
}

// db[c] = the sum of column c of rows [R x Cout] (column-major: channel c's R values contiguous),
// added to db where `add`. One block per channel: its threads stride over the rows (coalesced),
// then a tree over the block in a fixed order (deterministic, as the CPU's in-order sum is, in
// another order). One thread per channel, as before 2026-12-01, took about 1.1 ms a vgg16 layer
// of R = 16384 whatever the SMs (docs/cuda-executor.md, "Conv bias gradients").
constexpr int kSumThreads = 256;

__global__ void sum_columns_kernel(const float* rows, float* db, long long R, bool add) {
  __shared__ float partial[kSumThreads];
  const float* column = rows + static_cast<long long>(blockIdx.x) * R;
  float sum = 0;
  for (long long r = threadIdx.x; r < R; r += kSumThreads) sum += column[r];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[blockIdx.x] = add ? db[blockIdx.x] + partial[0] : partial[0];
}

}  // namespace

void conv2d_forward(Context& c, const ConvShape& s, const float* w, const float* b, const float* x, float* z, int n,
                    float* workspace) {
  const Geometry g = geometry(s);
  const long long R = g.positions() * n;
  float* cols = workspace;
  float* rows = workspace + R * s.patch();
  im2col_kernel<<<blocks_for(R * s.patch()), 256, 0, c.impl().stream>>>(g, x, cols, n);
  check_launch("im2col");
  const float one = 1, zero = 0;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(R), g.Cout, s.patch(), &one, cols,
                           static_cast<int>(R), w, g.Cout, &zero, rows, static_cast<int>(R)),
               "conv forward GEMM");
  rows_to_columns_kernel<<<blocks_for(R * g.Cout), 256, 0, c.impl().stream>>>(g, rows, b, z, n);
  check_launch("conv rows_to_columns");
}

void conv2d_backward_input(Context& c, const ConvShape& s, const float* w, const float* dz, float* dx, int n,
                           float* workspace) {
  const Geometry g = geometry(s);
  const long long R = g.positions() * n;
  float* dcols = workspace;
  float* drows = workspace + R * s.patch();
  columns_to_rows_kernel<<<blocks_for(R * g.Cout), 256, 0, c.impl().stream>>>(g, dz, drows, n);
  check_launch("conv columns_to_rows");
  const float one = 1, zero = 0;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(R), s.patch(), g.Cout, &one, drows,
                           static_cast<int>(R), w, g.Cout, &zero, dcols, static_cast<int>(R)),
               "conv activation-gradient GEMM");
  col2im_kernel<<<blocks_for(static_cast<long long>(g.C) * g.H * g.W * n), 256, 0, c.impl().stream>>>(g, dcols, dx, n);
  check_launch("col2im");
}

// add: dw and db get the gradients added to what they hold (the GEMM's beta = 1), else written.
void conv2d_backward_weight(Context& c, const ConvShape& s, const float* x, const float* dz, float* dw, float* db,
                            int n, float* workspace, bool add) {
  const Geometry g = geometry(s);
  const long long R = g.positions() * n;
  float* cols = workspace;
  float* drows = workspace + R * s.patch();
  im2col_kernel<<<blocks_for(R * s.patch()), 256, 0, c.impl().stream>>>(g, x, cols, n);
  check_launch("im2col");
  columns_to_rows_kernel<<<blocks_for(R * g.Cout), 256, 0, c.impl().stream>>>(g, dz, drows, n);
  check_launch("conv columns_to_rows");
  const float one = 1, beta = add ? 1.0f : 0.0f;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_T, CUBLAS_OP_N, g.Cout, s.patch(), static_cast<int>(R), &one, drows,
                           static_cast<int>(R), cols, static_cast<int>(R), &beta, dw, g.Cout),
               "conv weight-gradient GEMM");
  if (db != nullptr) {
    sum_columns_kernel<<<g.Cout, kSumThreads, 0, c.impl().stream>>>(drows, db, R, add);
    check_launch("conv bias gradient");
  }
}

}  // namespace pipetwin::cuda
