// The CPU executor's layer kernels (Eigen, fp32), forward and backward side by side, one file per
// kernel in exec/cpu/kernels/. Activations of n samples are matrices [features x n], one column
// per sample, features in C x H x W order (c * H * W + h * W + w). Each backward kernel is checked
// against finite differences in tests/test_cpu_kernels.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "pipetwin/exec/layers/geometry.hpp"

namespace pipetwin::cpu {

using exec::ConvGeometry;
using exec::PoolGeometry;
using exec::PoolKind;
using exec::ShortcutGeometry;

using Matrix = Eigen::MatrixXf;  // column-major
using Vector = Eigen::VectorXf;

// Columns [begin, begin + count) of a [features x n] matrix, read in place: a matrix, or its
// contiguous columns (outer stride = rows; the kernels that hand it to oneDNN check that).
using ConstColumns = Eigen::Ref<const Matrix>;

inline std::int64_t bytes_of(const Matrix& m) { return static_cast<std::int64_t>(m.size()) * 4; }
inline std::int64_t bytes_of(const Vector& v) { return static_cast<std::int64_t>(v.size()) * 4; }

// Whether a weight gradient kernel writes dW, or adds it to what dW holds (a gradient sum over
// microbatches, with no buffer and no pass of its own). db is written either way.
enum class WeightGradient { write, add };

// ---- dense: y = W x + b --------------------------------------------------------------------
// W [out x in], b [out] (may be empty), x [in x n], y [out x n].
Matrix dense_forward(const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b, const Matrix& x);
Matrix dense_backward_input(const Eigen::Ref<const Matrix>& w, const ConstColumns& dy);  // dx [in x n]
// dW [out x in] and db [out] (when `db` is not null).
void dense_backward_weight(const Matrix& x, const Matrix& dy, Eigen::Ref<Matrix> dw, Vector* db,
                           WeightGradient mode = WeightGradient::write);

// ---- conv2d: im2col + GEMM, groups = 1, zero padding -------------------------------------------
// W [out_channels x C*k*k] (c, kh, kw order), b [out_channels] (may be empty),
// x [C*H*W x n] -> z [out_channels*Ho*Wo x n].
Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w,
                      const Eigen::Ref<const Vector>& b, const Matrix& x);
Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz);
void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz,
                            Eigen::Ref<Matrix> dw, Vector* db, WeightGradient mode = WeightGradient::write);

// ---- batch normalization over (samples, H, W) per channel, batch statistics ------------------
struct BatchNormStash {
  Matrix normalized;  // xhat [C*HW x n]
  Vector inv_std;     // [C]
};
// z [C*HW x n] -> gamma * xhat + beta.
Matrix batch_norm_forward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                          const Eigen::Ref<const Vector>& beta, const Matrix& z, BatchNormStash& stash);
// The same written over z (bit for bit the same values): no new buffer for the output, which a
// convolution's output, read once here, does not need (the executor's forwards use this one).
void batch_norm_forward_in_place(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                 const Eigen::Ref<const Vector>& beta, Matrix& z, BatchNormStash& stash);
// dy -> dz; dgamma, dbeta when not null.
Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta);
constexpr float kBatchNormEpsilon = 1e-5f;

// ---- ReLU (in place on the forward; the backward masks by the forward's output) -------------
void relu_forward(Matrix& x);
Matrix relu_backward(const Matrix& output, const Matrix& dy);

// ---- pooling (no padding) ---------------------------------------------------------------------
// x [C*H*W x n] -> [C*Ho*Wo x n]; max pooling records the winning input row per output element.
Matrix pool_forward(const PoolGeometry& g, const Matrix& x, std::vector<std::int32_t>* argmax);
Matrix pool_backward(const PoolGeometry& g, const Matrix& dy, const std::vector<std::int32_t>& argmax);

// ---- residual shortcut, option A (He et al. 2016): subsample by the stride, zero-pad channels --
Matrix shortcut_forward(const ShortcutGeometry& g, const Matrix& x);
Matrix shortcut_backward(const ShortcutGeometry& g, const Matrix& dy);

// ---- softmax cross-entropy --------------------------------------------------------------------
// logits [classes x n], labels [n]. Returns the summed loss over the n samples; `dlogits` gets the
// gradient of (summed loss / loss_scale), i.e. (softmax - onehot) / loss_scale.
double softmax_cross_entropy(const Matrix& logits, const std::vector<std::int32_t>& labels,
                             double loss_scale, Matrix* dlogits);

}  // namespace pipetwin::cpu
