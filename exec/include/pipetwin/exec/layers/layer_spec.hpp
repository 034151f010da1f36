// One network layer as the executors run it, whatever the backend: which parts it has (conv2d or
// dense; bias, batch norm, residual add, ReLU, pooling, softmax cross-entropy), their shapes, and
// where each part of its flat parameters W | bias | gamma | beta starts. Throws, naming the layer,
// for what the executors do not run.
#pragma once
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "pipetwin/exec/layers/geometry.hpp"
#include "pipetwin/models/layer.hpp"

namespace pipetwin::exec {

// Where each part of a layer's flat parameters starts (-1: the layer has none of it).
struct ParamLayout {
  std::int64_t weight = 0, bias = -1, gamma = -1, beta = -1;
};

class LayerSpec {
 public:
  // `feeds_residual`: the next layer adds this layer's input as its shortcut; `block_input_shape`:
  // for a layer that adds a residual, the shape of its block's input (the previous layer's input).
  LayerSpec(const Layer& layer, bool feeds_residual, const std::vector<std::int64_t>& block_input_shape = {});

  const Layer& layer() const { return layer_; }
  std::int64_t parameter_count() const { return parameter_count_; }
  // Glorot-uniform weights from `seed`; zero biases; gamma 1, beta 0.
  Eigen::VectorXf initial_parameters(std::uint64_t seed) const;

  bool is_conv() const { return conv_; }
  bool is_pooled() const { return pooled_; }
  bool feeds_residual() const { return feeds_residual_; }
  bool has_bias() const { return layout_.bias >= 0; }
  bool has_batch_norm() const { return layout_.gamma >= 0; }
  bool has_relu() const { return conv_ ? layer_.conv2d.relu : layer_.dense.relu; }
  bool adds_residual() const { return conv_ && layer_.conv2d.residual_add; }
  bool is_loss() const { return !conv_ && layer_.dense.loss; }
  const ConvGeometry& conv_geometry() const { return conv_geometry_; }
  const PoolGeometry& pool_geometry() const { return pool_geometry_; }
  const ShortcutGeometry& shortcut_geometry() const { return shortcut_geometry_; }
  std::int64_t weight_rows() const { return weight_rows_; }
  std::int64_t weight_cols() const { return weight_cols_; }
  std::int64_t channels() const { return channels_; }
  std::int64_t in_features() const { return in_features_; }
  std::int64_t block_input_features() const {
    return shortcut_geometry_.in_channels * shortcut_geometry_.in_height * shortcut_geometry_.in_width;
  }
  std::int64_t positions() const { return conv_ ? conv_geometry_.out_height() * conv_geometry_.out_width() : 1; }
  const ParamLayout& parameter_layout() const { return layout_; }

 private:
  Layer layer_;
  bool feeds_residual_ = false;
  bool conv_ = false;
  bool pooled_ = false;
  ConvGeometry conv_geometry_;
  PoolGeometry pool_geometry_;
  ShortcutGeometry shortcut_geometry_;
  std::int64_t weight_rows_ = 0, weight_cols_ = 0, channels_ = 0, in_features_ = 0;
  std::int64_t parameter_count_ = 0;
  ParamLayout layout_;
};

// The specs of a whole network, in order.
std::vector<LayerSpec> make_layer_specs(const std::vector<Layer>& layers);

}  // namespace pipetwin::exec
