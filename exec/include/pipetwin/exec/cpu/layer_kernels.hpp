// The CPU backend's side of the layer composition (pipetwin/exec/layers/layer_composition.hpp):
// the kernels behind the kernel interface, parameters as one flat vector W | bias | gamma | beta.
// Convolutions and dense layers run on oneDNN when the build has it (onednn_kernels.hpp), else on
// Eigen; every other kernel is Eigen's (exec/cpu/kernels/). Weight gradients (dW, db, dgamma,
// dbeta) go into `grad` as `grad_mode` says: added (a backward adds straight into its update's
// sum over microbatches; param_buffer gives zeros) or written (the sum's first backward, into the
// uninitialised room param_buffer gives: no pass to zero it). Tensors are PooledMatrix: with a
// pool of `tensors` (the CPU executor gives each processor's kernels its own), every tensor a
// kernel makes takes its buffer from the pool and gives it back when it dies; without one they
// are plain matrices.
#pragma once
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "pipetwin/models/layer.hpp"

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/cpu/onednn_kernels.hpp"

namespace pipetwin::cpu {

struct CpuLayerKernels {
  using Tensor = PooledMatrix;
  using Params = Vector;
  using Index = std::vector<std::int32_t>;
  using BatchNormStash = cpu::BatchNormStash;
  using Labels = std::vector<std::int32_t>;

  bool use_onednn = onednn::available();  // false: the Eigen convolutions and dense layers
  onednn::PlanCache* plans = nullptr;  // the network's oneDNN convolution plans, kept between calls (or none)
  WeightGradient grad_mode = WeightGradient::add;  // how weight gradients go into `grad`
  std::shared_ptr<TensorPool> tensors;  // the pool the tensors made take their buffers from (or none)

  // Where the kernels make their tensors: the pool, or new buffers.
  Room room() const { return Room{tensors.get()}; }
  // A kernel's result, its buffer to go back to the pool.
  Tensor made(Matrix m) const { return Tensor(std::move(m), tensors); }

  // A weight gradient's part into its place in `grad`, as grad_mode says.
  template <typename Place, typename Part>
  void into(Place&& place, const Part& part) const {
    if (grad_mode == WeightGradient::add) {
      place += part;
    } else {
      place = part;
    }
  }
  // The same for a matrix product, evaluated straight into its place (no temporary).
  template <typename Place, typename Product>
  void product_into(Place&& place, const Product& product) const {
    if (grad_mode == WeightGradient::add) {
      place.noalias() += product;
    } else {
      place.noalias() = product;
    }
  }

  static std::int64_t rows(const Matrix& t) { return t.rows(); }
  static std::int64_t cols(const Matrix& t) { return t.cols(); }
  static bool empty(const Matrix& t) { return t.size() == 0; }
  // Columns of a [features x n] tensor, read in place (they are contiguous: column-major).
  static Eigen::Map<const Matrix> columns(const Matrix& t, std::int64_t begin, std::int64_t count) {
    return Eigen::Map<const Matrix>(t.data() + begin * t.rows(), t.rows(), count);
  }

  // The same copied into a tensor of its own, its buffer from the pool.
  Tensor copy_columns(const Matrix& t, std::int64_t begin, std::int64_t count) const {
    Tensor copy = made(room().take(t.rows(), count));
    copy = columns(t, begin, count);
    return copy;
  }

  // A part of the flat parameters (empty when `at` is -1).
  static Eigen::Map<const Vector> part(const Vector& p, std::int64_t at, std::int64_t n) {
    return at < 0 ? Eigen::Map<const Vector>(nullptr, 0) : Eigen::Map<const Vector>(p.data() + at, n);
  }
  static Eigen::Map<const Matrix> weights(const Vector& p, std::int64_t rows, std::int64_t cols) {
    return Eigen::Map<const Matrix>(p.data(), rows, cols);
  }

  // ---- Tensor parallelism (Megatron-LM's column- and row-parallel linear layers) ----
  // The `ranks` shards of a dense layer, each on a thread of its own (the ranks of a group); W is
  // [out x in] (y = W x): a column-parallel layer's rank has rows [i out/t, (i+1) out/t) of W and
  // makes those outputs; a row-parallel one's has the same columns, its partial outputs summed in
  // rank order (the all-reduce), the bias added once.
  template <typename Shard>
  static void on_ranks(std::int64_t ranks, const Shard& shard) {
    std::vector<std::thread> threads;
    for (std::int64_t i = 1; i < ranks; ++i) threads.emplace_back([&shard, i] { shard(i); });
    shard(0);
    for (auto& thread : threads) thread.join();
  }
  Tensor dense_split(const Vector& p, std::int64_t rows, std::int64_t cols, std::int64_t bias_at, const Matrix& x,
                     std::int64_t ranks, TensorSplit split) {
    const auto w = weights(p, rows, cols);
    const auto b = part(p, bias_at, rows);
    if (split == TensorSplit::columns) {
      const std::int64_t n = rows / ranks;
      Tensor y = made(room().take(rows, x.cols()));  // [out x samples]: each rank's rows
      on_ranks(ranks, [&](std::int64_t i) {
        y.middleRows(i * n, n).noalias() = w.middleRows(i * n, n) * x;
        if (b.size() > 0) y.middleRows(i * n, n).colwise() += b.segment(i * n, n);
      });
      return y;
    }
    const std::int64_t n = cols / ranks;
    std::vector<Matrix> partial(static_cast<std::size_t>(ranks));  // [out x samples] each
    on_ranks(ranks, [&](std::int64_t i) { partial[static_cast<std::size_t>(i)].noalias() = w.middleCols(i * n, n) * x.middleRows(i * n, n); });
    Tensor y = made(room().take(rows, x.cols()));
    y = partial[0];
    for (std::int64_t i = 1; i < ranks; ++i) y += partial[static_cast<std::size_t>(i)];
    if (b.size() > 0) y.colwise() += b;
    return y;
  }
  Tensor dense_split_backward_input(const Vector& p, std::int64_t rows, std::int64_t cols, const ConstColumns& dz,
                                    std::int64_t ranks, TensorSplit split) {
    const auto w = weights(p, rows, cols);
    if (split == TensorSplit::rows) {  // each rank's input shard: its columns of W
      const std::int64_t n = cols / ranks;
      Tensor dx = made(room().take(cols, dz.cols()));
      on_ranks(ranks, [&](std::int64_t i) { dx.middleRows(i * n, n).noalias() = w.middleCols(i * n, n).transpose() * dz; });
      return dx;
    }
    const std::int64_t n = rows / ranks;  // column-parallel: the partial input gradients summed
    std::vector<Matrix> partial(static_cast<std::size_t>(ranks));
    on_ranks(ranks, [&](std::int64_t i) {
      partial[static_cast<std::size_t>(i)].noalias() = w.middleRows(i * n, n).transpose() * dz.middleRows(i * n, n);
    });
    Tensor dx = made(room().take(cols, dz.cols()));
    dx = partial[0];
    for (std::int64_t i = 1; i < ranks; ++i) dx += partial[static_cast<std::size_t>(i)];
    return dx;
  }
  void dense_split_backward_weight(const Matrix& x, const Matrix& dz, std::int64_t rows, std::int64_t cols,
                                   std::int64_t bias_at, Vector& grad, std::int64_t ranks, TensorSplit split) {
    Eigen::Map<Matrix> dw(grad.data(), rows, cols);
    if (split == TensorSplit::columns) {
      const std::int64_t n = rows / ranks;
      on_ranks(ranks, [&](std::int64_t i) { product_into(dw.middleRows(i * n, n), dz.middleRows(i * n, n) * x.transpose()); });
    } else {
      const std::int64_t n = cols / ranks;
      on_ranks(ranks, [&](std::int64_t i) { product_into(dw.middleCols(i * n, n), dz * x.middleRows(i * n, n).transpose()); });
    }
    if (bias_at >= 0) into(grad.segment(bias_at, rows), dz.rowwise().sum());
  }

  Tensor dense(const Vector& p, std::int64_t rows, std::int64_t cols, std::int64_t bias_at, const Matrix& x) {
    return made(use_onednn ? onednn::dense_forward(weights(p, rows, cols), part(p, bias_at, rows), x, room())
                           : dense_forward(weights(p, rows, cols), part(p, bias_at, rows), x, room()));
  }
  Tensor conv2d(const ConvGeometry& g, const Vector& p, std::int64_t bias_at, const Matrix& x) {
    return convolve(g, p, bias_at, x, false);
  }
  // The same followed by ReLU (the composition takes it where nothing comes between): oneDNN
  // applies it as it writes the output; the Eigen convolution is followed by relu_forward.
  Tensor conv2d_relu(const ConvGeometry& g, const Vector& p, std::int64_t bias_at, const Matrix& x) {
    return convolve(g, p, bias_at, x, true);
  }
  // Over z's own buffer (the composition moves it in): the convolution's output is read once here.
  Tensor batch_norm(std::int64_t channels, std::int64_t, const Vector& p, std::int64_t gamma_at, std::int64_t beta_at,
                    Tensor z, BatchNormStash& stash) {
    stash_room(stash, z);
    batch_norm_forward_in_place(channels, part(p, gamma_at, channels), part(p, beta_at, channels), z, stash);
    return z;
  }
  // Batch norm's epilogue in one pass (the composition takes it where the kernels have it): batch
  // norm over z's own buffer, the shortcut of the block input `x` added (when not null) and ReLU
  // (when `relu`), each channel's run finished while it is in the cache.
  Tensor batch_norm_add_relu(std::int64_t channels, std::int64_t, const Vector& p, std::int64_t gamma_at,
                             std::int64_t beta_at, Tensor z, BatchNormStash& stash, const ShortcutGeometry& g,
                             const Matrix* x, bool relu) {
    Tensor shortcut;  // S(x) where the shortcut is not the block input itself [C*HW x n]
    if (x != nullptr && !g.identity()) shortcut = made(shortcut_forward(g, *x, room()));
    stash_room(stash, z);
    const Matrix* residual = x == nullptr ? nullptr : g.identity() ? x : &shortcut;
    batch_norm_add_relu_in_place(channels, part(p, gamma_at, channels), part(p, beta_at, channels), z, stash, residual,
                                 relu);
    return z;
  }
  void add_shortcut(const ShortcutGeometry& g, const Matrix& x, Matrix& z) {
    if (g.identity()) {
      z += x;  // no copy of the block input
    } else {
      z += made(shortcut_forward(g, x, room()));
    }
  }
  void relu(Matrix& z) { relu_forward(z); }
  Tensor pool(const PoolGeometry& g, const Matrix& z, Index* argmax) {
    return made(pool_forward(g, z, argmax, room()));
  }
  double softmax_cross_entropy(const Matrix& z, const Labels* labels, double loss_scale, Tensor* dlogits) {
    if (dlogits != nullptr) *dlogits = made(room().take(z.rows(), z.cols()));
    return cpu::softmax_cross_entropy(z, *labels, loss_scale, dlogits);
  }
  Tensor zeros(std::int64_t rows, std::int64_t n) {
    Tensor z = made(room().take(rows, n));
    z.setZero();
    return z;
  }

  Tensor pool_backward(const PoolGeometry& g, const Matrix& dy, const Index& argmax) {
    return made(cpu::pool_backward(g, dy, argmax, room()));
  }
  Tensor relu_backward(const Matrix& out, const Matrix& dy) { return made(cpu::relu_backward(out, dy, room())); }
  // The same over dy's own buffer (a gradient the layer made itself, e.g. pooling's).
  void relu_backward_in_place(const Matrix& out, Matrix& dy) { cpu::relu_backward(out.data(), dy.data(), dy.data(), dy.size()); }
  Tensor shortcut_backward(const ShortcutGeometry& g, const Matrix& dy) { return made(cpu::shortcut_backward(g, dy, room())); }
  Tensor batch_norm_backward(std::int64_t channels, std::int64_t, const Vector& p, std::int64_t gamma_at,
                             const BatchNormStash& stash, const Matrix& dy, Vector* grad, std::int64_t dgamma_at,
                             std::int64_t dbeta_at) {
    return batch_norm_backward_into(channels, p, gamma_at, stash, nullptr, dy, grad, dgamma_at, dbeta_at, nullptr);
  }
  // batch_norm_backward of dy masked by ReLU's output `out`, without the masked copy; `masked`, when
  // not null, gets it too.
  Tensor batch_norm_backward_through_relu(std::int64_t channels, std::int64_t, const Vector& p, std::int64_t gamma_at,
                                          const BatchNormStash& stash, const Matrix& out, const Matrix& dy, Vector* grad,
                                          std::int64_t dgamma_at, std::int64_t dbeta_at, Tensor* masked) {
    return batch_norm_backward_into(channels, p, gamma_at, stash, &out, dy, grad, dgamma_at, dbeta_at, masked);
  }
  Tensor dense_backward_input(const Vector& p, std::int64_t rows, std::int64_t cols, const ConstColumns& dz) {
    return made(use_onednn ? onednn::dense_backward_input(weights(p, rows, cols), dz, room())
                           : cpu::dense_backward_input(weights(p, rows, cols), dz, room()));
  }
  Tensor conv2d_backward_input(const ConvGeometry& g, const Vector& p, const ConstColumns& dz) {
    const auto w = weights(p, g.out_channels, g.patch());
    return made(use_onednn ? onednn::conv2d_backward_input(g, w, dz, plans, room()) : cpu::conv2d_backward_input(g, w, dz, room()));
  }
  void add(Matrix& x, const ConstColumns& y) { x += y; }
  // Room for a layer's parameter gradient: zeros to add into, or uninitialised to write.
  Vector param_buffer(std::int64_t count) { return grad_mode == WeightGradient::add ? Vector::Zero(count) : Vector(count); }
  void dense_backward_weight(const Matrix& x, const Matrix& dz, std::int64_t rows, std::int64_t cols,
                             std::int64_t bias_at, Vector& grad) {
    Eigen::Map<Matrix> dw(grad.data(), rows, cols);
    Vector db;
    if (use_onednn) {
      onednn::dense_backward_weight(x, dz, dw, bias_at >= 0 ? &db : nullptr, grad_mode);
    } else {
      cpu::dense_backward_weight(x, dz, dw, bias_at >= 0 ? &db : nullptr, grad_mode);
    }
    if (bias_at >= 0) into(grad.segment(bias_at, rows), db);
  }
  void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz, std::int64_t bias_at,
                              Vector& grad) {
    Eigen::Map<Matrix> dw(grad.data(), g.out_channels, g.patch());
    Vector db;
    if (use_onednn) {
      onednn::conv2d_backward_weight(g, x, dz, dw, bias_at >= 0 ? &db : nullptr, grad_mode, plans);
    } else {
      cpu::conv2d_backward_weight(g, x, dz, dw, bias_at >= 0 ? &db : nullptr, grad_mode);
    }
    if (bias_at >= 0) into(grad.segment(bias_at, g.out_channels), db);
  }

 private:
  Tensor convolve(const ConvGeometry& g, const Vector& p, std::int64_t bias_at, const Matrix& x, bool relu) {
    const auto w = weights(p, g.out_channels, g.patch());
    const auto b = part(p, bias_at, g.out_channels);
    if (use_onednn) return made(onednn::conv2d_forward(g, w, b, x, relu, plans, room()));
    Matrix z = conv2d_forward(g, w, b, x, room());
    if (relu) relu_forward(z);
    return made(std::move(z));
  }
  // Batch norm's xhat [C*HW x n] in a buffer from the pool (the kernel writes it whole).
  void stash_room(BatchNormStash& stash, const Matrix& z) const {
    if (tensors) stash.normalized = made(room().take(z.rows(), z.cols()));
  }
  // Batch norm's backward (through ReLU where `relu_output` is not null), dgamma and dbeta into
  // grad when it is not null.
  Tensor batch_norm_backward_into(std::int64_t channels, const Vector& p, std::int64_t gamma_at,
                                  const BatchNormStash& stash, const Matrix* relu_output, const Matrix& dy, Vector* grad,
                                  std::int64_t dgamma_at, std::int64_t dbeta_at, Tensor* masked) {
    Vector dgamma, dbeta;
    Vector* const dgamma_out = grad ? &dgamma : nullptr;
    Vector* const dbeta_out = grad ? &dbeta : nullptr;
    const auto gamma = part(p, gamma_at, channels);
    if (masked != nullptr) *masked = made(room().take(dy.rows(), dy.cols()));
    Tensor dz = made(relu_output != nullptr ? cpu::batch_norm_backward_through_relu(channels, gamma, stash, *relu_output, dy,
                                                                                    dgamma_out, dbeta_out, masked, room())
                                            : cpu::batch_norm_backward(channels, gamma, stash, dy, dgamma_out, dbeta_out, room()));
    if (grad != nullptr) {
      into(grad->segment(dgamma_at, channels), dgamma);
      into(grad->segment(dbeta_at, channels), dbeta);
    }
    return dz;
  }
};

}  // namespace pipetwin::cpu
