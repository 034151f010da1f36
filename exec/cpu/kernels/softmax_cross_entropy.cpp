// Softmax cross-entropy on logits, numerically stable (max subtracted), with its gradient.
#include <cmath>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

double softmax_cross_entropy(const Matrix& logits, const std::vector<std::int32_t>& labels,
                             double loss_scale, Matrix* dlogits) {
  double loss = 0;
  if (dlogits != nullptr) dlogits->resize(logits.rows(), logits.cols());
  Vector exps(logits.rows());  // [classes]: one sample's at a time (one buffer for the call)
  for (std::int64_t s = 0; s < logits.cols(); ++s) {
    const auto column = logits.col(s);
    const float top = column.maxCoeff();
    exps = (column.array() - top).exp().matrix();
    const float total = exps.sum();
    const std::int32_t label = labels[static_cast<std::size_t>(s)];
    loss += std::log(static_cast<double>(total)) - static_cast<double>(column[label] - top);
    if (dlogits != nullptr) {
      dlogits->col(s) = exps / total;
      (*dlogits)(label, s) -= 1.0f;
    }
  }
  if (dlogits != nullptr) *dlogits /= static_cast<float>(loss_scale);
  return loss;
}

}  // namespace pipetwin::cpu
