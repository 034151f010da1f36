// Batch normalization with the statistics of the microbatch (training mode), per channel over
// samples and positions; gamma and beta are the layer's parameters. A channel's values are one
// contiguous run of H*W floats in each sample's column: every loop below walks those runs (a
// vectorized float reduction per run, runs accumulated in double).
#include <cmath>
#include <string>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/models/error.hpp"

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

// A fused kernel's second operand must have the first's shape: "internal: batch norm's residual
// is 3 x 7, its output 18 x 7".
void check_same_shape(const char* name, const Matrix& m, const char* other_name, const Matrix& other) {
  if (m.rows() == other.rows() && m.cols() == other.cols()) return;
  throw Error(std::string("internal: batch norm's ") + name + " is " + std::to_string(m.rows()) + " x " +
              std::to_string(m.cols()) + ", its " + other_name + " " + std::to_string(other.rows()) + " x " +
              std::to_string(other.cols()));
}

// One channel's run of one sample, finished: xhat = (z - mean) * inv_std into the stash, then
// gamma * xhat + beta, plus the residual's run (Residual) and through ReLU (Relu), into y's run, in
// one loop the compiler vectorizes (no branch). `y` may be `z` itself: each element of z is read
// before y's is written.
template <bool Residual, bool Relu>
void finish_run(const float* z, float* xhat, float* y, const float* residual, std::int64_t size, float mean,
                float inv_std, float gamma, float beta) {
  for (std::int64_t i = 0; i < size; ++i) {
    const float normalized = (z[i] - mean) * inv_std;
    xhat[i] = normalized;
    float out = normalized * gamma + beta;
    if constexpr (Residual) out += residual[i];
    if constexpr (Relu) out = out < 0.0f ? 0.0f : out;  // NaN stays NaN, as relu_forward
    y[i] = out;
  }
}

// Normalizes z into the stash and writes gamma * xhat + beta into y, which may be z itself; with
// `residual` (not null) its run added, and with `relu` ReLU applied, run by run while the run is in
// the cache: the arithmetic of separate passes over y, in the same order.
void normalize(std::int64_t channels, const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
               const Matrix& z, Matrix& y, BatchNormStash& stash, const Matrix* residual = nullptr,
               bool relu = false) {
  const std::int64_t n = z.cols();
  const Runs run{z.rows(), z.rows() / channels};
  const double count = static_cast<double>(run.positions * n);
  stash.normalized.resize(z.rows(), n);
  stash.inv_std.resize(channels);
  const auto finish = residual != nullptr ? (relu ? finish_run<true, true> : finish_run<true, false>)
                                          : (relu ? finish_run<false, true> : finish_run<false, false>);
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (std::int64_t s = 0; s < n; ++s) sum += run.of(z, c, s).sum();
    const float mean = static_cast<float>(sum / count);
    double squares = 0;
    for (std::int64_t s = 0; s < n; ++s) squares += (run.of(z, c, s) - mean).square().sum();
    const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / count + kBatchNormEpsilon));
    stash.inv_std[c] = inv_std;
    for (std::int64_t s = 0; s < n; ++s) {
      const std::int64_t at = s * run.rows + c * run.positions;
      finish(z.data() + at, stash.normalized.data() + at, y.data() + at,
             residual != nullptr ? residual->data() + at : nullptr, run.positions, mean, inv_std, gamma[c], beta[c]);
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

void batch_norm_add_relu_in_place(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                  const Eigen::Ref<const Vector>& beta, Matrix& z, BatchNormStash& stash,
                                  const Matrix* residual, bool relu) {
  if (residual != nullptr) check_same_shape("residual", *residual, "output", z);
  normalize(channels, gamma, beta, z, z, stash, residual, relu);
}

namespace {

// dy -> dz as batch_norm_backward says, dy masked by `relu_output` first where it is not null:
// the masked run is written into dz's room (and *masked's) and read from there, so the sums and
// dz see the very floats a masked copy would hold.
Matrix backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma, const BatchNormStash& stash,
                const Matrix* relu_output, const Matrix& dy, Vector* dgamma, Vector* dbeta, Matrix* masked, const Room& room) {
  const std::int64_t n = dy.cols();
  const Runs run{dy.rows(), dy.rows() / channels};
  const float count = static_cast<float>(run.positions * n);
  if (dgamma != nullptr) dgamma->resize(channels);
  if (dbeta != nullptr) dbeta->resize(channels);
  Matrix dz = room.take(dy.rows(), n);
  if (masked != nullptr) masked->resize(dy.rows(), n);
  // What the sums read: dy, or its masked runs in dz.
  const Matrix& gradient = relu_output != nullptr ? dz : dy;
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      if (relu_output != nullptr) {
        const std::int64_t at = s * run.rows + c * run.positions;
        relu_backward(relu_output->data() + at, dy.data() + at, dz.data() + at, run.positions);
        if (masked != nullptr) run.of(*masked, c, s) = run.of(dz, c, s);
      }
      sum_dy += run.of(gradient, c, s).sum();
      sum_dy_xhat += (run.of(gradient, c, s) * run.of(stash.normalized, c, s)).sum();
    }
    const float total_dy = static_cast<float>(sum_dy), total_dy_xhat = static_cast<float>(sum_dy_xhat);
    if (dgamma != nullptr) (*dgamma)[c] = total_dy_xhat;
    if (dbeta != nullptr) (*dbeta)[c] = total_dy;
    // dz = gamma * inv_std / N * (N dy - sum(dy) - xhat sum(dy xhat)), element by element (over
    // the masked gradient in dz's own runs where it is there)
    const float scale = gamma[c] * stash.inv_std[c] / count;
    for (std::int64_t s = 0; s < n; ++s) {
      run.of(dz, c, s) = (run.of(gradient, c, s) * count - total_dy - run.of(stash.normalized, c, s) * total_dy_xhat) * scale;
    }
  }
  return dz;
}

}  // namespace

Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta, const Room& room) {
  return backward(channels, gamma, stash, nullptr, dy, dgamma, dbeta, nullptr, room);
}

Matrix batch_norm_backward_through_relu(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                        const BatchNormStash& stash, const Matrix& relu_output, const Matrix& dy,
                                        Vector* dgamma, Vector* dbeta, Matrix* masked, const Room& room) {
  check_same_shape("ReLU output", relu_output, "gradient", dy);
  return backward(channels, gamma, stash, &relu_output, dy, dgamma, dbeta, masked, room);
}

}  // namespace pipetwin::cpu
