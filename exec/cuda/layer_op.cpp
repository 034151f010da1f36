// Conv2d (+ batch norm, residual add, ReLU, pooling) and dense (+ ReLU or softmax cross-entropy)
// layers on the CUDA kernels, mirroring exec/cpu/layer_op.cpp step for step.
#include "layer_op.hpp"

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

PoolKind pool_kind(cpu::PoolKind kind) {
  switch (kind) {
    case cpu::PoolKind::max: return PoolKind::max;
    case cpu::PoolKind::avg: return PoolKind::avg;
    case cpu::PoolKind::global_avg: return PoolKind::global_avg;
  }
  return PoolKind::max;
}

int as_int(std::int64_t value) { return static_cast<int>(value); }

}  // namespace

LayerOp::LayerOp(const cpu::LayerOp& reference)
    : layer_(reference.layer()), conv_(reference.is_conv()), pooled_(reference.is_pooled()),
      feeds_residual_(reference.feeds_residual()), rows_(as_int(reference.weight_rows())),
      cols_(as_int(reference.weight_cols())), channels_(as_int(reference.channels())),
      parameters_(reference.parameter_count()), in_features_(shape_elements(reference.layer().input_shape)),
      at_(reference.parameter_layout()) {
  bias_ = at_.bias >= 0;
  batch_norm_ = at_.gamma >= 0;
  if (conv_) {
    const auto& g = reference.conv_geometry();
    conv_shape_ = {as_int(g.in_channels), as_int(g.height), as_int(g.width), as_int(g.out_channels),
                   as_int(g.kernel), as_int(g.stride), as_int(g.padding)};
    relu_ = layer_.conv2d.relu;
    residual_add_ = layer_.conv2d.residual_add;
    if (pooled_) {
      const auto& p = reference.pool_geometry();
      pool_shape_ = {pool_kind(p.kind), as_int(p.channels), as_int(p.height), as_int(p.width), as_int(p.kernel), as_int(p.stride)};
    }
    const auto& s = reference.shortcut_geometry();
    shortcut_shape_ = {as_int(s.in_channels), as_int(s.in_height), as_int(s.in_width),
                       as_int(s.out_channels), as_int(s.out_height), as_int(s.out_width)};
  } else {
    relu_ = layer_.dense.relu;
    loss_ = layer_.dense.loss;
  }
}

Activation LayerOp::forward(Lane& lane, const Tensor& params, const Activation& in, LayerStash& stash,
                            const Tensor* labels, double loss_scale, double* loss) const {
  Context& c = *lane.context;
  const int n = as_int(in.main.cols);
  const float* w = params.data();
  const float* b = part(params, at_.bias);
  stash.input = in.main;
  Activation out;
  if (feeds_residual_) out.shortcut = in.main;
  if (!conv_) {
    Tensor z = lane.tensor(rows_, n);
    dense_forward(c, w, b, in.main.data(), z.data(), rows_, cols_, n);
    if (loss_) {
      if (labels == nullptr || labels->size() != n) throw Error("internal: loss layer without labels");
      Tensor per_sample = lane.tensor(1, n);
      stash.loss_gradient = lane.tensor(rows_, n);
      softmax_cross_entropy(c, z.data(), labels->ints(), rows_, n, static_cast<float>(loss_scale), per_sample.data(),
                            stash.loss_gradient.data());
      std::vector<float> losses(static_cast<std::size_t>(n));
      check_cuda(cudaMemcpyAsync(losses.data(), per_sample.data(), losses.size() * 4, cudaMemcpyDeviceToHost, c.impl().stream),
                 "loss download");
      c.synchronize();
      for (const float l : losses) *loss += l;
      out.main = lane.tensor(1, n);  // what it sends on: nothing but the loss
      check_cuda(cudaMemsetAsync(out.main.data(), 0, static_cast<std::size_t>(out.main.bytes()), c.impl().stream), "memset");
      return out;
    }
    if (relu_) relu_forward(c, z.data(), z.size());
    stash.activation = z;
    out.main = z;
    return out;
  }
  Tensor z = lane.tensor(static_cast<std::int64_t>(conv_shape_.out_channels) * conv_shape_.out_height() * conv_shape_.out_width(), n);
  conv2d_forward(c, conv_shape_, w, b, in.main.data(), z.data(), n, lane.workspace(conv_shape_.workspace(n)));
  if (batch_norm_) {
    const int positions = conv_shape_.out_height() * conv_shape_.out_width();
    Tensor y = lane.tensor(z.rows, n);
    stash.normalized = lane.tensor(z.rows, n);
    stash.inv_std = lane.tensor(channels_, 1);
    batch_norm_forward(c, channels_, positions, n, part(params, at_.gamma), part(params, at_.beta), z.data(), y.data(),
                       stash.normalized.data(), stash.inv_std.data());
    z = y;
  }
  if (residual_add_) {
    const std::int64_t block_features = static_cast<std::int64_t>(shortcut_shape_.in_channels) * shortcut_shape_.in_height * shortcut_shape_.in_width;
    if (in.shortcut.rows != block_features) throw Error("internal: residual layer '" + layer_.name + "' without its block input");
    shortcut_forward_add(c, shortcut_shape_, in.shortcut.data(), z.data(), n);
  }
  if (relu_) relu_forward(c, z.data(), z.size());
  stash.activation = z;
  if (pooled_) {
    const std::int64_t pooled = static_cast<std::int64_t>(pool_shape_.channels) * pool_shape_.out_height() * pool_shape_.out_width();
    out.main = lane.tensor(pooled, n);
    if (pool_shape_.kind == PoolKind::max) stash.argmax = lane.tensor(pooled, n);
    pool_forward(c, pool_shape_, z.data(), out.main.data(), stash.argmax.empty() ? nullptr : stash.argmax.ints(), n);
  } else {
    out.main = z;
  }
  return out;
}

Tensor LayerOp::linear_output_gradient(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out,
                                       Tensor* shortcut_grad, float* dgamma, float* dbeta) const {
  Context& c = *lane.context;
  if (!conv_ && loss_) return stash.loss_gradient;
  if (out == nullptr) throw Error("internal: layer '" + layer_.name + "' backward without its output gradient");
  Tensor grad = out->main;  // at the layer's output
  const int n = as_int(grad.cols);
  if (!conv_) {
    if (!relu_) return grad;
    Tensor masked = lane.tensor(grad.rows, n);
    relu_backward(c, stash.activation.data(), grad.data(), masked.data(), grad.size());
    return masked;
  }
  if (pooled_) {
    Tensor unpooled = lane.tensor(stash.activation.rows, n);
    pool_backward(c, pool_shape_, grad.data(), stash.argmax.empty() ? nullptr : stash.argmax.ints(), unpooled.data(), n);
    grad = unpooled;
  }
  if (relu_) {
    Tensor masked = lane.tensor(grad.rows, n);
    relu_backward(c, stash.activation.data(), grad.data(), masked.data(), grad.size());
    grad = masked;
  }
  if (residual_add_ && shortcut_grad != nullptr) {
    *shortcut_grad = lane.tensor(static_cast<std::int64_t>(shortcut_shape_.in_channels) * shortcut_shape_.in_height * shortcut_shape_.in_width, n);
    shortcut_backward(c, shortcut_shape_, grad.data(), shortcut_grad->data(), n);
  }
  if (batch_norm_) {
    Tensor dz = lane.tensor(grad.rows, n);
    const int positions = conv_shape_.out_height() * conv_shape_.out_width();
    batch_norm_backward(c, channels_, positions, n, part(params, at_.gamma), stash.normalized.data(), stash.inv_std.data(),
                        grad.data(), dz.data(), dgamma, dbeta);
    grad = dz;
  }
  return grad;
}

Gradient LayerOp::backward_input(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out,
                                 std::int64_t begin, std::int64_t end) const {
  Context& c = *lane.context;
  Tensor shortcut_grad;
  const Tensor dz = linear_output_gradient(lane, params, stash, out, &shortcut_grad, nullptr, nullptr);
  const int m = as_int(end - begin);
  const Tensor slice = dz.columns(begin, m);
  Gradient in;
  in.first_sample = begin;
  in.main = lane.tensor(in_features_, m);
  if (conv_) {
    conv2d_backward_input(c, conv_shape_, params.data(), slice.data(), in.main.data(), m, lane.workspace(conv_shape_.workspace(m)));
  } else {
    dense_backward_input(c, params.data(), slice.data(), in.main.data(), rows_, cols_, m);
  }
  // This layer's input is a block input: add the gradient the next layer's residual sent back.
  if (feeds_residual_ && out != nullptr && !out->shortcut.empty()) {
    add_into(c, out->shortcut.columns(begin, m).data(), in.main.data(), in.main.size());
  }
  if (!shortcut_grad.empty()) in.shortcut = shortcut_grad.columns(begin, m);
  return in;
}

Tensor LayerOp::backward_weight(Lane& lane, const Tensor& params, const LayerStash& stash, const Gradient* out) const {
  Context& c = *lane.context;
  Tensor grad = lane.tensor(parameters_, 1);
  float* g = grad.data();
  const Tensor dz = linear_output_gradient(lane, params, stash, out, nullptr, batch_norm_ ? g + at_.gamma : nullptr,
                                           batch_norm_ ? g + at_.beta : nullptr);
  const int n = as_int(dz.cols);
  float* db = bias_ ? g + at_.bias : nullptr;
  if (conv_) {
    conv2d_backward_weight(c, conv_shape_, stash.input.data(), dz.data(), g, db, n, lane.workspace(conv_shape_.workspace(n)));
  } else {
    dense_backward_weight(c, stash.input.data(), dz.data(), g, db, rows_, cols_, n);
  }
  return grad;
}

}  // namespace pipetwin::cuda
