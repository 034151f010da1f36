// Batch normalization with the statistics of the microbatch (training mode), per channel over
// samples and positions; gamma and beta are the layer's parameters. A channel's values are one
// contiguous run of H*W floats in each sample's column: every loop below walks those runs (a
// vectorized float reduction per run, runs accumulated in double).
#include <cmath>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {
namespace {

using Run = Eigen::Map<const Eigen::ArrayXf>;     // one channel of one sample [H*W]
using MutableRun = Eigen::Map<Eigen::ArrayXf>;

}  // namespace

Matrix batch_norm_forward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                          const Eigen::Ref<const Vector>& beta, const Matrix& z, BatchNormStash& stash) {
  const std::int64_t positions = z.rows() / channels, n = z.cols(), rows = z.rows();
  const double count = static_cast<double>(positions * n);
  stash.normalized.resize(rows, n);
  stash.inv_std.resize(channels);
  Matrix y(rows, n);
  for (std::int64_t c = 0; c < channels; ++c) {
    const std::int64_t at = c * positions;
    double sum = 0;
    for (std::int64_t s = 0; s < n; ++s) sum += Run(z.data() + s * rows + at, positions).sum();
    const float mean = static_cast<float>(sum / count);
    double squares = 0;
    for (std::int64_t s = 0; s < n; ++s) squares += (Run(z.data() + s * rows + at, positions) - mean).square().sum();
    const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / count + kBatchNormEpsilon));
    stash.inv_std[c] = inv_std;
    for (std::int64_t s = 0; s < n; ++s) {
      MutableRun xhat(stash.normalized.data() + s * rows + at, positions);
      xhat = (Run(z.data() + s * rows + at, positions) - mean) * inv_std;
      MutableRun(y.data() + s * rows + at, positions) = xhat * gamma[c] + beta[c];
    }
  }
  return y;
}

Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta) {
  const std::int64_t positions = dy.rows() / channels, n = dy.cols(), rows = dy.rows();
  const float count = static_cast<float>(positions * n);
  if (dgamma != nullptr) dgamma->resize(channels);
  if (dbeta != nullptr) dbeta->resize(channels);
  Matrix dz(rows, n);
  for (std::int64_t c = 0; c < channels; ++c) {
    const std::int64_t at = c * positions;
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const Run g(dy.data() + s * rows + at, positions), xhat(stash.normalized.data() + s * rows + at, positions);
      sum_dy += g.sum();
      sum_dy_xhat += (g * xhat).sum();
    }
    if (dgamma != nullptr) (*dgamma)[c] = static_cast<float>(sum_dy_xhat);
    if (dbeta != nullptr) (*dbeta)[c] = static_cast<float>(sum_dy);
    // dz = gamma * inv_std / N * (N dy - sum(dy) - xhat sum(dy xhat))
    const float scale = gamma[c] * stash.inv_std[c] / count;
    const float total_dy = static_cast<float>(sum_dy), total_dy_xhat = static_cast<float>(sum_dy_xhat);
    for (std::int64_t s = 0; s < n; ++s) {
      const Run g(dy.data() + s * rows + at, positions), xhat(stash.normalized.data() + s * rows + at, positions);
      MutableRun(dz.data() + s * rows + at, positions) = (g * count - total_dy - xhat * total_dy_xhat) * scale;
    }
  }
  return dz;
}

}  // namespace pipetwin::cpu
