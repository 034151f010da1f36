// One network layer as the CUDA executor runs it: the same layer, parameter layout and backward
// split as the CPU executor's LayerOp (exec/cpu/layer_op.hpp), whose checks and geometry it
// reuses, composed from the CUDA kernels on a lane's stream. Tensors a task receives are never
// written: every result lands in a new tensor, so payloads and stashes can share blocks.
#pragma once
#include <cstdint>
#include <vector>

#include "device_memory.hpp"
#include "lane.hpp"
#include "pipetwin/exec/cpu/layer_op.hpp"

namespace pipetwin::cuda {

struct Activation {
  Tensor main;      // [out_features x n]
  Tensor shortcut;  // [block input features x n], or empty
  std::int64_t bytes() const { return main.bytes() + shortcut.bytes(); }
};

struct Gradient {
  Tensor main;      // columns [first_sample, first_sample + cols) of the microbatch
  Tensor shortcut;
  std::int64_t first_sample = 0;
  std::int64_t bytes() const { return main.bytes() + shortcut.bytes(); }
};

struct LayerStash {
  Tensor input;          // x [in_features x n]
  Tensor activation;     // after ReLU, before pooling
  Tensor normalized;     // batch norm's xhat
  Tensor inv_std;        // batch norm, [channels]
  Tensor argmax;         // max pooling, ints [pooled features x n]
  Tensor loss_gradient;  // loss layer: d loss / d logits [classes x n]
  std::int64_t bytes() const {
    return input.bytes() + activation.bytes() + normalized.bytes() + inv_std.bytes() + argmax.bytes() + loss_gradient.bytes();
  }
  std::vector<Tensor*> tensors() { return {&input, &activation, &normalized, &inv_std, &argmax, &loss_gradient}; }
};

class LayerOp {
 public:
  explicit LayerOp(const cpu::LayerOp& reference);

  // `labels`: ints [n] on the lane's device (the loss layer); the summed loss is added to *loss.
  Activation forward(Lane& lane, const Tensor& params, const Activation& in, LayerStash& stash, const Tensor* labels,
                     double loss_scale, double* loss) const;
  Gradient backward_input(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out,
                          std::int64_t begin, std::int64_t end) const;
  Tensor backward_weight(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out) const;

 private:
  Tensor linear_output_gradient(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out,
                                Tensor* shortcut_grad, float* dgamma, float* dbeta) const;
  const float* part(const Tensor& params, std::int64_t at) const { return at < 0 ? nullptr : params.data() + at; }

  Layer layer_;
  bool conv_ = false, pooled_ = false, feeds_residual_ = false;
  bool bias_ = false, batch_norm_ = false, relu_ = false, loss_ = false, residual_add_ = false;
  int rows_ = 0, cols_ = 0, channels_ = 0;
  std::int64_t parameters_ = 0;
  std::int64_t in_features_ = 0;
  cpu::ParamLayout at_;
  ConvShape conv_shape_;
  PoolShape pool_shape_;
  ShortcutShape shortcut_shape_;
};

}  // namespace pipetwin::cuda
