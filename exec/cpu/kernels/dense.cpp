// Dense (fully connected) layer: y = W x + b, with its activation and weight gradients.
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

Matrix dense_forward(const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room) {
  Matrix y = room.take(w.rows(), x.cols());  // [out x n]
  y.noalias() = w * x;
  if (b.size() > 0) y.colwise() += b;
  return y;
}

Matrix dense_backward_input(const Eigen::Ref<const Matrix>& w, const ConstColumns& dy, const Room& room) {
  Matrix dx = room.take(w.cols(), dy.cols());  // [in x n]
  dx.noalias() = w.transpose() * dy;
  return dx;
}

void dense_backward_weight(const Matrix& x, const Matrix& dy, Eigen::Ref<Matrix> dw, Vector* db, WeightGradient mode) {
  if (mode == WeightGradient::add) {
    dw.noalias() += dy * x.transpose();  // [out x in]
  } else {
    dw.noalias() = dy * x.transpose();
  }
  if (db != nullptr) *db = dy.rowwise().sum();
}

}  // namespace pipetwin::cpu
