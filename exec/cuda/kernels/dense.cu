// Dense layer on cuBLAS (column-major, as the CPU executor's Eigen matrices): y = W x + b,
// dx = W^T dy, dW = dy x^T, db = row sums of dy (dW and db added to a sum where asked: the GEMM's
// beta = 1).
#include "../cuda_check.hpp"

namespace pipetwin::cuda {

void dense_forward(Context& c, const float* w, const float* b, const float* x, float* y, int out, int in, int n) {
  const float one = 1, zero = 0;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_N, CUBLAS_OP_N, out, n, in, &one, w, out, x, in, &zero, y, out),
               "dense forward GEMM");
  if (b != nullptr) add_bias(c, b, y, out, n);
}

void dense_backward_input(Context& c, const float* w, const float* dy, float* dx, int out, int in, int n) {
  const float one = 1, zero = 0;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, &one, w, out, dy, out, &zero, dx, in),
               "dense activation-gradient GEMM");
}

void dense_backward_weight(Context& c, const float* x, const float* dy, float* dw, float* db, int out, int in, int n,
                           bool add) {
  const float one = 1, beta = add ? 1.0f : 0.0f;
  check_cublas(cublasSgemm(c.impl().blas, CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, &one, dy, out, x, in, &beta, dw, out),
               "dense weight-gradient GEMM");
  if (db != nullptr) sum_rows(c, dy, db, out, n, add);
}

}  // namespace pipetwin::cuda
