// Bias add over columns and its gradient (row sums).
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void add_bias_kernel(const float* b, float* y, int rows, long long count) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] += b[i % rows];
}

// One thread per row; columns summed in order (deterministic), then added to db where `add`.
__global__ void sum_rows_kernel(const float* dy, float* db, int rows, int n, bool add) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float sum = 0;
  for (int s = 0; s < n; ++s) sum += dy[static_cast<long long>(s) * rows + r];
  db[r] = add ? db[r] + sum : sum;
}

}  // namespace

void add_bias(Context& c, const float* b, float* y, int rows, int n) {
  const long long count = static_cast<long long>(rows) * n;
  add_bias_kernel<<<blocks_for(count), 256, 0, c.impl().stream>>>(b, y, rows, count);
  check_launch("add_bias");
}

void sum_rows(Context& c, const float* dy, float* db, int rows, int n, bool add) {
  sum_rows_kernel<<<blocks_for(rows), 256, 0, c.impl().stream>>>(dy, db, rows, n, add);
  check_launch("sum_rows");
}

}  // namespace pipetwin::cuda
