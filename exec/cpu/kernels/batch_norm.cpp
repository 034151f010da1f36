// Batch normalization with the statistics of the microbatch (training mode), per channel over
// samples and positions; gamma and beta are the layer's parameters.
#include <cmath>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

Matrix batch_norm_forward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                          const Eigen::Ref<const Vector>& beta, const Matrix& z, BatchNormStash& stash) {
  const std::int64_t positions = z.rows() / channels;
  const double count = static_cast<double>(positions * z.cols());
  stash.normalized.resize(z.rows(), z.cols());
  stash.inv_std.resize(channels);
  Matrix y(z.rows(), z.cols());
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto block = z.middleRows(c * positions, positions);
    const double mean = static_cast<double>(block.cast<double>().sum()) / count;
    const double variance = (block.cast<double>().array() - mean).square().sum() / count;
    const float inv_std = static_cast<float>(1.0 / std::sqrt(variance + kBatchNormEpsilon));
    auto normalized = stash.normalized.middleRows(c * positions, positions);
    normalized = (block.array() - static_cast<float>(mean)) * inv_std;
    stash.inv_std[c] = inv_std;
    y.middleRows(c * positions, positions) = (normalized.array() * gamma[c] + beta[c]).matrix();
  }
  return y;
}

Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta) {
  const std::int64_t positions = dy.rows() / channels;
  const float count = static_cast<float>(positions * dy.cols());
  if (dgamma != nullptr) dgamma->resize(channels);
  if (dbeta != nullptr) dbeta->resize(channels);
  Matrix dz(dy.rows(), dy.cols());
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto g = dy.middleRows(c * positions, positions).array();
    const auto xhat = stash.normalized.middleRows(c * positions, positions).array();
    const float sum_dy = g.sum();
    const float sum_dy_xhat = (g * xhat).sum();
    if (dgamma != nullptr) (*dgamma)[c] = sum_dy_xhat;
    if (dbeta != nullptr) (*dbeta)[c] = sum_dy;
    // dz = gamma * inv_std / N * (N dy - sum(dy) - xhat sum(dy xhat))
    dz.middleRows(c * positions, positions) =
        ((g * count - sum_dy - xhat * sum_dy_xhat) * (gamma[c] * stash.inv_std[c] / count)).matrix();
  }
  return dz;
}

}  // namespace pipetwin::cpu
