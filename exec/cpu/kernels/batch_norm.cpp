// Batch normalization with the statistics of the microbatch (training mode), per channel over
// samples and positions; gamma and beta are the layer's parameters. A channel's values are one
// contiguous run of H*W floats in each sample's column: every loop below walks those runs (a
// vectorized float reduction per run, runs accumulated in double).
#include <cmath>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {
namespace {

// Channel runs of an activation [C*H*W x n]: one channel's H*W values in sample s's column.
struct Runs {
  std::int64_t rows, positions;
  Eigen::Map<const Eigen::ArrayXf> of(const Matrix& m, std::int64_t c, std::int64_t s) const {
    return {m.data() + s * rows + c * positions, positions};
  }
  Eigen::Map<Eigen::ArrayXf> of(Matrix& m, std::int64_t c, std::int64_t s) const {
    return {m.data() + s * rows + c * positions, positions};
  }
};

// Normalizes z into the stash and writes gamma * xhat + beta into y, which may be z itself: each
// run's xhat is taken from z before y's run is written.
void normalize(std::int64_t channels, const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
               const Matrix& z, Matrix& y, BatchNormStash& stash) {
  const std::int64_t n = z.cols();
  const Runs run{z.rows(), z.rows() / channels};
  const double count = static_cast<double>(run.positions * n);
  stash.normalized.resize(z.rows(), n);
  stash.inv_std.resize(channels);
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (std::int64_t s = 0; s < n; ++s) sum += run.of(z, c, s).sum();
    const float mean = static_cast<float>(sum / count);
    double squares = 0;
    for (std::int64_t s = 0; s < n; ++s) squares += (run.of(z, c, s) - mean).square().sum();
    const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / count + kBatchNormEpsilon));
    stash.inv_std[c] = inv_std;
    for (std::int64_t s = 0; s < n; ++s) {
      auto xhat = run.of(stash.normalized, c, s);
      xhat = (run.of(z, c, s) - mean) * inv_std;
      run.of(y, c, s) = xhat * gamma[c] + beta[c];
    }
  }
}

}  // namespace

Matrix batch_norm_forward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                          const Eigen::Ref<const Vector>& beta, const Matrix& z, BatchNormStash& stash) {
  Matrix y(z.rows(), z.cols());
  normalize(channels, gamma, beta, z, y, stash);
  return y;
}

void batch_norm_forward_in_place(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                 const Eigen::Ref<const Vector>& beta, Matrix& z, BatchNormStash& stash) {
  normalize(channels, gamma, beta, z, z, stash);
}

Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta) {
  const std::int64_t n = dy.cols();
  const Runs run{dy.rows(), dy.rows() / channels};
  const float count = static_cast<float>(run.positions * n);
  if (dgamma != nullptr) dgamma->resize(channels);
  if (dbeta != nullptr) dbeta->resize(channels);
  Matrix dz(dy.rows(), n);
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      sum_dy += run.of(dy, c, s).sum();
      sum_dy_xhat += (run.of(dy, c, s) * run.of(stash.normalized, c, s)).sum();
    }
    const float total_dy = static_cast<float>(sum_dy), total_dy_xhat = static_cast<float>(sum_dy_xhat);
    if (dgamma != nullptr) (*dgamma)[c] = total_dy_xhat;
    if (dbeta != nullptr) (*dbeta)[c] = total_dy;
    // dz = gamma * inv_std / N * (N dy - sum(dy) - xhat sum(dy xhat))
    const float scale = gamma[c] * stash.inv_std[c] / count;
    for (std::int64_t s = 0; s < n; ++s) {
      run.of(dz, c, s) = (run.of(dy, c, s) * count - total_dy - run.of(stash.normalized, c, s) * total_dy_xhat) * scale;
    }
  }
  return dz;
}

}  // namespace pipetwin::cpu
