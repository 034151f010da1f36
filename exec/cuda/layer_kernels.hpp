// The CUDA backend's side of the layer composition (pipetwin/exec/layers/layer_composition.hpp):
// the kernels of exec/cuda/kernels/ on one lane's stream behind the kernel interface. Every result
// lands in a new tensor from the lane's pool, so tensors a task received are never written and
// payloads and stashes can share blocks. No CUDA header here.
#pragma once
#include <cstdint>

#include "device_memory.hpp"
#include "lane.hpp"
#include "pipetwin/exec/layers/layer_composition.hpp"

namespace pipetwin::cuda {

struct CudaLayerKernels {
  using Tensor = cuda::Tensor;
  using Params = cuda::Tensor;  // [count x 1]
  using Index = cuda::Tensor;   // ints, one per pooled output element
  using Labels = cuda::Tensor;  // ints [n] on the lane's device
  struct BatchNormStash {
    Tensor normalized;  // xhat [C*HW x n]
    Tensor inv_std;     // [C]
  };

  Lane& lane;
  // Weight gradients (dW, db, dgamma, dbeta) added to what `grad` holds (a sum an earlier
  // backward began: the backend adds into gradients, graph_execution.hpp), or written into it.
  bool add_weight_gradients = false;

  static std::int64_t rows(const Tensor& t) { return t.rows; }
  static std::int64_t cols(const Tensor& t) { return t.cols; }
  static bool empty(const Tensor& t) { return t.empty(); }
  static Tensor columns(const Tensor& t, std::int64_t begin, std::int64_t count) { return t.columns(begin, count); }

  Tensor dense(const Params& p, std::int64_t rows, std::int64_t cols, std::int64_t bias_at, const Tensor& x);
  // Tensor-parallel dense layers: not on GPUs yet (run_cuda refuses them before anything runs).
  Tensor dense_split(const Params&, std::int64_t, std::int64_t, std::int64_t, const Tensor&, std::int64_t, TensorSplit) {
    throw Error("the CUDA executor does not run tensor-parallel layers yet");
  }
  Tensor dense_split_backward_input(const Params&, std::int64_t, std::int64_t, const Tensor&, std::int64_t, TensorSplit) {
    throw Error("the CUDA executor does not run tensor-parallel layers yet");
  }
  void dense_split_backward_weight(const Tensor&, const Tensor&, std::int64_t, std::int64_t, std::int64_t, Params&,
                                   std::int64_t, TensorSplit) {
    throw Error("the CUDA executor does not run tensor-parallel layers yet");
  }
  Tensor conv2d(const exec::ConvGeometry& g, const Params& p, std::int64_t bias_at, const Tensor& x);
  Tensor batch_norm(std::int64_t channels, std::int64_t positions, const Params& p, std::int64_t gamma_at,
                    std::int64_t beta_at, const Tensor& z, BatchNormStash& stash);
  void add_shortcut(const exec::ShortcutGeometry& g, const Tensor& x, Tensor& z);
  void relu(Tensor& z);
  Tensor pool(const exec::PoolGeometry& g, const Tensor& z, Index* argmax);
  double softmax_cross_entropy(const Tensor& z, const Labels* labels, double loss_scale, Tensor* dlogits);
  Tensor zeros(std::int64_t rows, std::int64_t n);

  Tensor pool_backward(const exec::PoolGeometry& g, const Tensor& dy, const Index& argmax);
  Tensor relu_backward(const Tensor& out, const Tensor& dy);
  Tensor shortcut_backward(const exec::ShortcutGeometry& g, const Tensor& dy);
  Tensor batch_norm_backward(std::int64_t channels, std::int64_t positions, const Params& p, std::int64_t gamma_at,
                             const BatchNormStash& stash, const Tensor& dy, Params* grad, std::int64_t dgamma_at,
                             std::int64_t dbeta_at);
  Tensor dense_backward_input(const Params& p, std::int64_t rows, std::int64_t cols, const Tensor& dz);
  Tensor conv2d_backward_input(const exec::ConvGeometry& g, const Params& p, const Tensor& dz);
  void add(Tensor& x, const Tensor& y);
  Params param_buffer(std::int64_t count) { return lane.tensor(count, 1); }
  void dense_backward_weight(const Tensor& x, const Tensor& dz, std::int64_t rows, std::int64_t cols,
                             std::int64_t bias_at, Params& grad);
  void conv2d_backward_weight(const exec::ConvGeometry& g, const Tensor& x, const Tensor& dz, std::int64_t bias_at,
                              Params& grad);
};

using Activation = exec::ActivationOf<Tensor>;
using Gradient = exec::GradientOf<Tensor>;
using LayerStash = exec::LayerStashOf<CudaLayerKernels>;
using LayerComposition = exec::LayerComposition<CudaLayerKernels>;

inline std::int64_t bytes_of(const Tensor& t) { return t.bytes(); }
inline std::int64_t bytes_of(const Activation& a) { return a.main.bytes() + a.shortcut.bytes(); }
inline std::int64_t bytes_of(const Gradient& g) { return g.main.bytes() + g.shortcut.bytes(); }
inline std::int64_t bytes_of(const LayerStash& s) {
  return s.input.bytes() + s.activation.bytes() + s.batch_norm.normalized.bytes() + s.batch_norm.inv_std.bytes() +
         s.argmax.bytes() + s.loss_gradient.bytes();
}

}  // namespace pipetwin::cuda
