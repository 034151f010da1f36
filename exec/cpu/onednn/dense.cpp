// Dense (fully connected) layer on oneDNN's sgemm (row-major, so each column-major product
// C = A B below is asked for as C^T = B^T A^T), with its activation and weight gradients.
#include "pipetwin/exec/cpu/onednn_kernels.hpp"

#include "onednn_call.hpp"

namespace pipetwin::cpu::onednn {
namespace {

// Column-major C [m x n] = op(A) [m x k] * op(B) [k x n] + beta C, through row-major sgemm.
void gemm(const Call& call, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(transpose_b ? 'T' : 'N', transpose_a ? 'T' : 'N', n, m, k, 1.0f, b, ldb, a,
                                          lda, beta, c, ldc);
  if (status != dnnl_success) throw call.error(dnnl::error(status, "sgemm failed"));
}

}  // namespace

Matrix dense_forward(const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room) {
  const Call call("dense forward");
  Matrix y = room.take(w.rows(), x.cols());  // [out x n]
  float beta = 0.0f;
  if (b.size() > 0) {
    y.colwise() = b;
    beta = 1.0f;
  }
  if (y.size() > 0) gemm(call, false, false, w.rows(), x.cols(), w.cols(), w.data(), w.outerStride(), x.data(), x.rows(), beta, y.data(), y.rows());
  return y;
}

Matrix dense_backward_input(const Eigen::Ref<const Matrix>& w, const ConstColumns& dy, const Room& room) {
  const Call call("dense input gradient");
  Matrix dx = room.take(w.cols(), dy.cols());  // [in x n] = W^T dy
  if (dx.size() > 0) gemm(call, true, false, w.cols(), dy.cols(), w.rows(), w.data(), w.outerStride(), dy.data(), dy.outerStride(), 0.0f, dx.data(), dx.rows());
  return dx;
}

void dense_backward_weight(const Matrix& x, const Matrix& dy, Eigen::Ref<Matrix> dw, Vector* db, WeightGradient mode) {
  const Call call("dense weight gradient");
  // dW [out x in] (+)= dy [out x n] * x^T [n x in]
  const float beta = mode == WeightGradient::add ? 1.0f : 0.0f;
  if (dw.size() > 0) gemm(call, false, true, dy.rows(), x.rows(), dy.cols(), dy.data(), dy.rows(), x.data(), x.rows(), beta, dw.data(), dw.outerStride());
  if (db != nullptr) *db = dy.rowwise().sum();
}

}  // namespace pipetwin::cpu::onednn
