// The CPU executor's layer kernels (Eigen, fp32), forward and backward side by side, one file per
// kernel in exec/cpu/kernels/. Activations of n samples are matrices [features x n], one column
// per sample, features in C x H x W order (c * H * W + h * W + w). Each backward kernel is checked
// against finite differences in tests/test_cpu_kernels.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "pipetwin/exec/cpu/tensor_pool.hpp"
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

// Every kernel that makes a tensor takes `room` (tensor_pool.hpp) and makes it in room.take(its
// shape): a buffer from the processor's TensorPool where the CPU executor gives one, by default a
// new one.

// Whether a weight gradient kernel writes dW, or adds it to what dW holds (a gradient sum over
// microbatches, with no buffer and no pass of its own). db is written either way.
enum class WeightGradient { write, add };

// ---- dense: y = W x + b --------------------------------------------------------------------
// W [out x in], b [out] (may be empty), x [in x n], y [out x n].
Matrix dense_forward(const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room = {});
Matrix dense_backward_input(const Eigen::Ref<const Matrix>& w, const ConstColumns& dy, const Room& room = {});  // dx [in x n]
// dW [out x in] and db [out] (when `db` is not null).
void dense_backward_weight(const Matrix& x, const Matrix& dy, Eigen::Ref<Matrix> dw, Vector* db,
                           WeightGradient mode = WeightGradient::write);

// ---- conv2d: im2col + GEMM, groups = 1, zero padding -------------------------------------------
// W [out_channels x C*k*k] (c, kh, kw order), b [out_channels] (may be empty),
// x [C*H*W x n] -> z [out_channels*Ho*Wo x n].
Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w,
                      const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room = {});
Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz, const Room& room = {});
void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz,
                            Eigen::Ref<Matrix> dw, Vector* db, WeightGradient mode = WeightGradient::write);

// ---- batch normalization over (samples, H, W) per channel, batch statistics ------------------
struct BatchNormStash {
  PooledMatrix normalized;  // xhat [C*HW x n]
  Vector inv_std;     // [C]
};
// z [C*HW x n] -> gamma * xhat + beta.
Matrix batch_norm_forward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                          const Eigen::Ref<const Vector>& beta, const Matrix& z, BatchNormStash& stash);
// The same written over z (bit for bit the same values): no new buffer for the output, which a
// convolution's output, read once here, does not need (the executor's forwards use this one).
void batch_norm_forward_in_place(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                 const Eigen::Ref<const Vector>& beta, Matrix& z, BatchNormStash& stash);
// The epilogue of a convolution with batch norm, fused: batch norm over z, then the block's
// shortcut `residual` added (when not null; [C*HW x n], S(x) of the block input) and ReLU (when
// `relu`), each channel's run of each sample finished while it is in the cache. Bit for bit
// batch_norm_forward_in_place, z += *residual, relu_forward(z), without their two more passes
// over z.
void batch_norm_add_relu_in_place(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                  const Eigen::Ref<const Vector>& beta, Matrix& z, BatchNormStash& stash,
                                  const Matrix* residual, bool relu);
// dy -> dz; dgamma, dbeta when not null.
Matrix batch_norm_backward(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                           const BatchNormStash& stash, const Matrix& dy, Vector* dgamma, Vector* dbeta, const Room& room = {});
// The same for a layer whose ReLU follows its batch norm: dy at ReLU's output, masked by that
// output (`relu_output`, the forward's) as relu_backward does, without a masked copy of dy (the
// masked gradient is written into dz's room, then dz over it). Bit for bit
// batch_norm_backward(channels, gamma, stash, relu_backward(relu_output, dy), ...). `masked`, when
// not null, also receives the masked gradient (what an identity shortcut sends back).
Matrix batch_norm_backward_through_relu(std::int64_t channels, const Eigen::Ref<const Vector>& gamma,
                                        const BatchNormStash& stash, const Matrix& relu_output, const Matrix& dy,
                                        Vector* dgamma, Vector* dbeta, Matrix* masked = nullptr, const Room& room = {});
constexpr float kBatchNormEpsilon = 1e-5f;

// ---- ReLU (in place on the forward; the backward masks by the forward's output) -------------
void relu_forward(Matrix& x);
Matrix relu_backward(const Matrix& output, const Matrix& dy, const Room& room = {});
// The same over `size` floats (the fused epilogues' runs): v[i] = max(v[i], 0), NaN kept;
// dx[i] = output[i] > 0 ? dy[i] : 0.
void relu_forward(float* v, std::int64_t size);
void relu_backward(const float* output, const float* dy, float* dx, std::int64_t size);

// ---- pooling (no padding) ---------------------------------------------------------------------
// x [C*H*W x n] -> [C*Ho*Wo x n]; max pooling records the winning input row per output element.
Matrix pool_forward(const PoolGeometry& g, const Matrix& x, std::vector<std::int32_t>* argmax, const Room& room = {});
Matrix pool_backward(const PoolGeometry& g, const Matrix& dy, const std::vector<std::int32_t>& argmax, const Room& room = {});

// ---- residual shortcut, option A (He et al. 2016): subsample by the stride, zero-pad channels --
Matrix shortcut_forward(const ShortcutGeometry& g, const Matrix& x, const Room& room = {});
Matrix shortcut_backward(const ShortcutGeometry& g, const Matrix& dy, const Room& room = {});

// ---- softmax cross-entropy --------------------------------------------------------------------
// logits [classes x n], labels [n]. Returns the summed loss over the n samples; `dlogits` gets the
// gradient of (summed loss / loss_scale), i.e. (softmax - onehot) / loss_scale.
double softmax_cross_entropy(const Matrix& logits, const std::vector<std::int32_t>& labels,
                             double loss_scale, Matrix* dlogits);

}  // namespace pipetwin::cpu
