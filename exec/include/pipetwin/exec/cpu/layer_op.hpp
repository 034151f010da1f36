// One network layer as the CPU executor runs it: its parameters in one flat vector, its forward
// (which stashes what the backward needs), and its backward split as the task kinds split it:
// the activation gradient (BA, for a slice of the samples, so that LayerPipe's BA parts each do
// their share) and the weight gradient (BW). A fused B is BA over all samples plus BW.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/models/layer.hpp"

namespace pipetwin::cpu {

// What a layer sends on: its output, and the block input when the next layer adds a residual.
struct Activation {
  Matrix main;      // [out_features x n]
  Matrix shortcut;  // [block input features x n], or empty
  std::int64_t bytes() const { return bytes_of(main) + bytes_of(shortcut); }
};

// What a layer's BA sends back: the gradient at its input (the previous layer's output), and at
// the block input when it adds a residual. Columns [first_sample, first_sample + cols) of the
// microbatch.
struct Gradient {
  Matrix main;
  Matrix shortcut;
  std::int64_t first_sample = 0;
  std::int64_t bytes() const { return bytes_of(main) + bytes_of(shortcut); }
};

// Kept from a layer's forward for its backward.
struct LayerStash {
  Matrix input;                      // x [in_features x n]
  Matrix activation;                 // after ReLU, before pooling [conv/dense out x n]
  BatchNormStash batch_norm;
  std::vector<std::int32_t> argmax;  // max pooling
  Matrix loss_gradient;              // loss layer: d loss / d logits [classes x n]
  std::int64_t bytes() const;
};

// Where each part of a layer's flat parameters starts (-1: the layer has none of it).
struct ParamLayout {
  std::int64_t weight = 0, bias = -1, gamma = -1, beta = -1;
};

class LayerOp {
 public:
  // `feeds_residual`: the next layer adds this layer's input as its shortcut; `block_input_shape`:
  // for a layer that adds a residual, the shape of its block's input (the previous layer's input).
  // Throws for layer types or options the executor does not run (says which).
  LayerOp(const Layer& layer, bool feeds_residual, const std::vector<std::int64_t>& block_input_shape = {});

  const Layer& layer() const { return layer_; }
  std::int64_t parameter_count() const { return parameter_count_; }
  Vector initial_parameters(std::uint64_t seed) const;

  // The layer's shape, for other executors that run the same layer (exec/cuda).
  bool is_conv() const { return conv_; }
  bool is_pooled() const { return pooled_; }
  bool feeds_residual() const { return feeds_residual_; }
  const ConvGeometry& conv_geometry() const { return conv_geometry_; }
  const PoolGeometry& pool_geometry() const { return pool_geometry_; }
  const ShortcutGeometry& shortcut_geometry() const { return shortcut_geometry_; }
  std::int64_t weight_rows() const { return weight_rows_; }
  std::int64_t weight_cols() const { return weight_cols_; }
  std::int64_t channels() const { return channels_; }
  ParamLayout parameter_layout() const;

  // The loss layer also takes the labels, adds the summed loss to *loss and stashes the gradient
  // of (loss / loss_scale).
  Activation forward(const Vector& params, const Activation& in, LayerStash& stash,
                     const std::vector<std::int32_t>* labels, double loss_scale, double* loss) const;
  // The loss layer's logits [classes x n] (no loss, no stash): for measuring accuracy.
  Matrix logits(const Vector& params, const Activation& in) const;
  // Gradient at the input for samples [begin, end); `out` is the gradient at the output
  // (assembled over all samples), null for the loss layer.
  Gradient backward_input(const Vector& params, const LayerStash& stash, const Gradient* out,
                          std::int64_t begin, std::int64_t end) const;
  // Gradient of every parameter, laid out as the parameters are.
  Vector backward_weight(const Vector& params, const LayerStash& stash, const Gradient* out) const;

 private:
  // From the gradient at the output to the gradient at the conv / dense output (before bias
  // add and batch norm); also the gradient at the residual's shortcut and at gamma / beta.
  Matrix linear_output_gradient(const Vector& params, const LayerStash& stash, const Gradient* out,
                                Matrix* shortcut_grad, Vector* dgamma, Vector* dbeta) const;

  Layer layer_;
  bool feeds_residual_ = false;
  bool conv_ = false;
  ConvGeometry conv_geometry_;
  PoolGeometry pool_geometry_;
  bool pooled_ = false;
  ShortcutGeometry shortcut_geometry_;
  std::int64_t weight_rows_ = 0, weight_cols_ = 0, channels_ = 0;
  std::int64_t parameter_count_ = 0;
};

// The ops of a whole network, in order.
std::vector<LayerOp> make_layer_ops(const std::vector<Layer>& layers);

}  // namespace pipetwin::cpu
