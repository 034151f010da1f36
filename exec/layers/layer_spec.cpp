// Layer shapes and parameter layouts for the executors (see layer_spec.hpp).
#include "pipetwin/exec/layers/layer_spec.hpp"

#include <cmath>
#include <random>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network.hpp"

namespace pipetwin::exec {
namespace {

PoolKind pool_kind(const std::string& layer, const std::string& kind) {
  if (kind == "max") return PoolKind::max;
  if (kind == "avg") return PoolKind::avg;
  if (kind == "global-avg") return PoolKind::global_avg;
  throw Error("layer '" + layer + "': the executors have no pooling kind '" + kind + "'");
}

}  // namespace

LayerSpec::LayerSpec(const Layer& layer, bool feeds_residual, const std::vector<std::int64_t>& block_input_shape)
    : layer_(layer), feeds_residual_(feeds_residual) {
  const auto unsupported = [&](const std::string& what) {
    return Error("layer '" + layer.name + "' (" + layer.type + "): the CPU executor does not run " + what +
                 " (it runs conv2d and dense layers: use mlp, lenet5, alexnet, vgg16 or the resnets)");
  };
  in_features_ = shape_elements(layer.input_shape);
  bool bias = false, batch_norm = false;
  if (layer.type == "conv2d") {
    const Conv2dSpec& spec = layer.conv2d;
    if (spec.groups != 1) throw unsupported("grouped convolutions");
    if (spec.connections != 0) throw unsupported("sparse channel tables (lenet5 c3=lecun)");
    conv_ = true;
    conv_geometry_ = {layer.input_shape[0], layer.input_shape[1], layer.input_shape[2],
                      spec.out_channels, spec.kernel, spec.stride, spec.padding};
    channels_ = spec.out_channels;
    weight_rows_ = spec.out_channels;
    weight_cols_ = conv_geometry_.patch();
    bias = spec.bias;
    batch_norm = spec.batch_norm;
    if (spec.pool.kind != "none") {
      pooled_ = true;
      pool_geometry_ = {pool_kind(layer.name, spec.pool.kind), spec.out_channels, conv_geometry_.out_height(),
                        conv_geometry_.out_width(), spec.pool.kernel, spec.pool.stride};
    }
    if (spec.residual_add) {
      if (block_input_shape.size() != 3) throw unsupported("a residual add without a CxHxW block input");
      shortcut_geometry_ = {block_input_shape[0], block_input_shape[1], block_input_shape[2], spec.out_channels,
                            conv_geometry_.out_height(), conv_geometry_.out_width()};
    }
  } else if (layer.type == "dense") {
    weight_rows_ = layer.dense.out_features;
    weight_cols_ = in_features_;
    channels_ = weight_rows_;
    bias = layer.dense.bias;
  } else {
    throw unsupported("this layer type");
  }
  std::int64_t at = weight_rows_ * weight_cols_;
  if (bias) {
    layout_.bias = at;
    at += channels_;
  }
  if (batch_norm) {
    layout_.gamma = at;
    layout_.beta = at + channels_;
    at += 2 * channels_;
  }
  parameter_count_ = at;
  // A tensor-parallel layer's declared parameters are one rank's; the executor holds the group's
  // whole layer (its ranks' shards side by side).
  if (parameter_count_ != layer.parameters && layer.tensor_parallel == 1) {
    throw Error("internal: layer '" + layer.name + "' has " + std::to_string(layer.parameters) +
                " parameters by its cost declaration but " + std::to_string(parameter_count_) + " in the executor");
  }
}

std::vector<LayerSpec> make_layer_specs(const std::vector<Layer>& layers) {
  std::vector<LayerSpec> specs;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const bool next_adds = feeds_residual(layers, l);
    const bool adds = layers[l].type == "conv2d" && layers[l].conv2d.residual_add;
    if (adds && l == 0) throw Error("layer '" + layers[l].name + "' adds a residual but has no block before it");
    specs.emplace_back(layers[l], next_adds, adds ? layers[l - 1].input_shape : std::vector<std::int64_t>{});
  }
  return specs;
}

Eigen::VectorXf LayerSpec::initial_parameters(std::uint64_t seed) const {
  std::mt19937_64 generator(seed);
  const double fan_in = static_cast<double>(weight_cols_);
  const double fan_out = static_cast<double>(conv_ ? weight_rows_ * conv_geometry_.kernel * conv_geometry_.kernel : weight_rows_);
  const double bound = std::sqrt(6.0 / (fan_in + fan_out));
  Eigen::VectorXf params = Eigen::VectorXf::Zero(parameter_count_);
  const std::int64_t weights = weight_rows_ * weight_cols_;
  for (std::int64_t i = 0; i < weights; ++i) {
    const double unit = static_cast<double>(generator() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    params[i] = static_cast<float>((2 * unit - 1) * bound);
  }
  if (layout_.gamma >= 0) params.segment(layout_.gamma, channels_).setOnes();
  return params;
}

}  // namespace pipetwin::exec
