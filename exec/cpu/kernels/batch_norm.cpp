// Batch normalization with the statistics of the microbatch (training mode), per channel over
// samples and positions; gamma and beta are the layer's parameters. A channel's values are one
// contiguous run of H*W floats in each sample's column: every loop below walks those runs (a
// float sum per run in lane_sum's fixed order, runs accumulated in double). The loops over the
// channels are compiled once per vector ISA (vector_clones.hpp) and give the same bits in each.
#include <cmath>
#include <cstring>
#include <string>

#include "../vector_clones.hpp"
#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/models/error.hpp"
#include "relu_loops.hpp"

namespace pipetwin::cpu {
namespace {

// A fused kernel's second operand must have the first's shape: "internal: batch norm's residual
// is 3 x 7, its output 18 x 7".
void check_same_shape(const char* name, const Matrix& m, const char* other_name, const Matrix& other) {
  if (m.rows() == other.rows() && m.cols() == other.cols()) return;
  throw Error(std::string("internal: batch norm's ") + name + " is " + std::to_string(m.rows()) + " x " +
              std::to_string(m.cols()) + ", its " + other_name + " " + std::to_string(other.rows()) + " x " +
              std::to_string(other.cols()));
}

// Where channel c's run of sample s starts in an activation [C*H*W x n] (columns of `rows`
// floats, a channel's `positions` floats in a row).
struct Runs {
  std::int64_t channels, positions, rows, samples;
  std::int64_t at(std::int64_t c, std::int64_t s) const { return s * rows + c * positions; }
};

PIPETWIN_INLINE_IN_CLONE float run_sum(const float* run, std::int64_t size) {
  return lane_sum(size, [run](std::int64_t i) { return run[i]; });
}

// One normalization's operands: z and the outputs y (z itself when in place) and xhat, all
// [C*H*W x n]; the residual (null: none) of that shape; gamma, beta and inv_std [C].
struct Normalization {
  Runs runs;
  const float* z;
  float* y;
  float* xhat;
  const float* residual;
  bool relu;
  const float* gamma;
  const float* beta;
  float* inv_std;
};

// One channel's run of one sample, finished: xhat = (z - mean) * inv_std into the stash, then
// gamma * xhat + beta, plus the residual's run (Residual) and through ReLU (Relu), into y's run.
// Called with y and z the same pointer when in place (each element of z is read before y's is
// written), so that the compiler sees one buffer and vectorizes without an overlap check.
template <bool Residual, bool Relu>
PIPETWIN_INLINE_IN_CLONE void finish_run(const float* z, float* xhat, float* y, const float* residual,
                                         std::int64_t size, float mean, float inv_std, float gamma, float beta) {
  for (std::int64_t i = 0; i < size; ++i) {
    const float normalized = (z[i] - mean) * inv_std;
    xhat[i] = normalized;
    float out = normalized * gamma + beta;
    if constexpr (Residual) out += residual[i];
    if constexpr (Relu) out = relu_of(out);  // NaN stays NaN, as relu_forward
    y[i] = out;
  }
}

template <bool Residual, bool Relu>
PIPETWIN_INLINE_IN_CLONE void finish_channel(const Normalization& a, std::int64_t c, float mean, float inv_std) {
  const Runs& r = a.runs;
  for (std::int64_t s = 0; s < r.samples; ++s) {
    const std::int64_t at = r.at(c, s);
    const float* residual = Residual ? a.residual + at : nullptr;
    if (a.y == a.z) {
      float* zy = a.y + at;
      finish_run<Residual, Relu>(zy, a.xhat + at, zy, residual, r.positions, mean, inv_std, a.gamma[c], a.beta[c]);
    } else {
      finish_run<Residual, Relu>(a.z + at, a.xhat + at, a.y + at, residual, r.positions, mean, inv_std, a.gamma[c],
                                 a.beta[c]);
    }
  }
}

// Every channel: its mean and variance over the samples' runs, then its runs finished while they
// are in the cache (the arithmetic of separate passes for the residual and ReLU, in their order).
PIPETWIN_VECTOR_CLONES
void normalize_channels(const Normalization& a) {
  const Runs& r = a.runs;
  const double count = static_cast<double>(r.positions * r.samples);
  for (std::int64_t c = 0; c < r.channels; ++c) {
    double sum = 0;
    for (std::int64_t s = 0; s < r.samples; ++s) sum += run_sum(a.z + r.at(c, s), r.positions);
    const float mean = static_cast<float>(sum / count);
    double squares = 0;
    for (std::int64_t s = 0; s < r.samples; ++s) {
      const float* run = a.z + r.at(c, s);
      squares += lane_sum(r.positions, [run, mean](std::int64_t i) {
        const float d = run[i] - mean;
        return d * d;
      });
    }
    const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / count + kBatchNormEpsilon));
    a.inv_std[c] = inv_std;
    if (a.residual != nullptr) {
      a.relu ? finish_channel<true, true>(a, c, mean, inv_std) : finish_channel<true, false>(a, c, mean, inv_std);
    } else {
      a.relu ? finish_channel<false, true>(a, c, mean, inv_std) : finish_channel<false, false>(a, c, mean, inv_std);
    }
  }
}

// Normalizes z into the stash and writes gamma * xhat + beta into y, which may be z itself; with
// `residual` (not null) its run added, and with `relu` ReLU applied.
void normalize(std::int64_t channels, const Eigen::Ref<const Vector>& gamma, const Eigen::Ref<const Vector>& beta,
               const Matrix& z, Matrix& y, BatchNormStash& stash, const Matrix* residual = nullptr,
               bool relu = false) {
  stash.normalized.resize(z.rows(), z.cols());
  stash.inv_std.resize(channels);
  const Runs runs{channels, z.rows() / channels, z.rows(), z.cols()};
  normalize_channels({runs, z.data(), y.data(), stash.normalized.data(), residual != nullptr ? residual->data() : nullptr,
                      relu, gamma.data(), beta.data(), stash.inv_std.data()});
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

// One backward's operands: dy, dz, xhat and the forward's ReLU output (null: no mask) and the
// masked copy (null: none), all [C*H*W x n]; gamma, inv_std and the sums dgamma, dbeta (null: not
// wanted) [C].
struct BackwardPass {
  Runs runs;
  const float* relu_output;
  const float* dy;
  float* dz;
  float* masked;
  const float* xhat;
  const float* gamma;
  const float* inv_std;
  float* dgamma;
  float* dbeta;
};

// dz = scale * (N g - sum(g) - xhat sum(g xhat)) over one run, g the gradient read (dz's own run
// when it holds the masked gradient: then the same pointer, read before written).
PIPETWIN_INLINE_IN_CLONE void dz_run(const float* g, const float* xhat, float* dz, std::int64_t size, float count,
                                     float total_dy, float total_dy_xhat, float scale) {
  for (std::int64_t i = 0; i < size; ++i) dz[i] = (g[i] * count - total_dy - xhat[i] * total_dy_xhat) * scale;
}

// Every channel: dy masked by the ReLU output first where there is one (written into dz's runs
// and *masked's, and read from dz's, so the sums and dz see the very floats a masked copy would
// hold), its sums over the samples' runs, then dz.
PIPETWIN_VECTOR_CLONES
void backward_channels(const BackwardPass& a) {
  const Runs& r = a.runs;
  const float count = static_cast<float>(r.positions * r.samples);
  for (std::int64_t c = 0; c < r.channels; ++c) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t s = 0; s < r.samples; ++s) {
      const std::int64_t at = r.at(c, s);
      const float* gradient = a.dy + at;
      if (a.relu_output != nullptr) {
        relu_mask(a.relu_output + at, a.dy + at, a.dz + at, r.positions);
        if (a.masked != nullptr) std::memcpy(a.masked + at, a.dz + at, static_cast<std::size_t>(r.positions) * sizeof(float));
        gradient = a.dz + at;
      }
      const float* xhat = a.xhat + at;
      sum_dy += run_sum(gradient, r.positions);
      sum_dy_xhat += lane_sum(r.positions, [gradient, xhat](std::int64_t i) { return gradient[i] * xhat[i]; });
    }
    const float total_dy = static_cast<float>(sum_dy), total_dy_xhat = static_cast<float>(sum_dy_xhat);
    if (a.dgamma != nullptr) a.dgamma[c] = total_dy_xhat;
    if (a.dbeta != nullptr) a.dbeta[c] = total_dy;
    const float scale = a.gamma[c] * a.inv_std[c] / count;
    for (std::int64_t s = 0; s < r.samples; ++s) {
      const std::int64_t at = r.at(c, s);
      float* dz = a.dz + at;
      if (a.relu_output != nullptr) {
        dz_run(dz, a.xhat + at, dz, r.positions, count, total_dy, total_dy_xhat, scale);
      } else {
        dz_run(a.dy + at, a.xhat + at, dz, r.positions, count, total_dy, total_dy_xhat, scale);
      }
    }
  }
}

// dy -> dz as batch_norm_backward says, dy masked by `relu_output` first where it is not null.
Matrix backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma, const BatchNormStash& stash,
                const Matrix* relu_output, const Matrix& dy, Vector* dgamma, Vector* dbeta, Matrix* masked, const Room& room) {
  if (dgamma != nullptr) dgamma->resize(channels);
  if (dbeta != nullptr) dbeta->resize(channels);
  Matrix dz = room.take(dy.rows(), dy.cols());
  if (masked != nullptr) masked->resize(dy.rows(), dy.cols());
  const Runs runs{channels, dy.rows() / channels, dy.rows(), dy.cols()};
  backward_channels({runs, relu_output != nullptr ? relu_output->data() : nullptr, dy.data(), dz.data(),
                     masked != nullptr ? masked->data() : nullptr, stash.normalized.data(), gamma.data(),
                     stash.inv_std.data(), dgamma != nullptr ? dgamma->data() : nullptr,
                     dbeta != nullptr ? dbeta->data() : nullptr});
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
