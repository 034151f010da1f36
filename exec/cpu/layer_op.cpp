// Conv2d (+ batch norm, residual add, ReLU, pooling) and dense (+ ReLU or softmax cross-entropy)
// layers composed from the kernels. Parameters, flat: W | bias | gamma | beta.
#include "pipetwin/exec/cpu/layer_op.hpp"

#include <cmath>
#include <random>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {

std::int64_t LayerStash::bytes() const {
  return bytes_of(input) + bytes_of(activation) + bytes_of(batch_norm.normalized) +
         bytes_of(batch_norm.inv_std) + static_cast<std::int64_t>(argmax.size()) * 4 + bytes_of(loss_gradient);
}

namespace {

PoolKind pool_kind(const std::string& layer, const std::string& kind) {
  if (kind == "max") return PoolKind::max;
  if (kind == "avg") return PoolKind::avg;
  if (kind == "global-avg") return PoolKind::global_avg;
  throw Error("layer '" + layer + "': the CPU executor has no pooling kind '" + kind + "'");
}

}  // namespace

LayerOp::LayerOp(const Layer& layer, bool feeds_residual, const std::vector<std::int64_t>& block_input_shape)
    : layer_(layer), feeds_residual_(feeds_residual) {
  const auto unsupported = [&](const std::string& what) {
    return Error("layer '" + layer.name + "' (" + layer.type + "): the CPU executor does not run " + what +
                 " (it runs conv2d and dense layers: use mlp, lenet5, alexnet, vgg16 or the resnets)");
  };
  const auto in_features = shape_elements(layer.input_shape);
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
    if (spec.pool.kind != "none") {
      pooled_ = true;
      pool_geometry_ = {pool_kind(layer.name, spec.pool.kind), spec.out_channels, conv_geometry_.out_height(),
                        conv_geometry_.out_width(), spec.pool.kernel, spec.pool.stride};
    }
    parameter_count_ = weight_rows_ * weight_cols_ + (spec.bias ? channels_ : 0) + (spec.batch_norm ? 2 * channels_ : 0);
    if (spec.residual_add) {
      if (block_input_shape.size() != 3) throw unsupported("a residual add without a CxHxW block input");
      shortcut_geometry_ = {block_input_shape[0], block_input_shape[1], block_input_shape[2], spec.out_channels,
                            conv_geometry_.out_height(), conv_geometry_.out_width()};
    }
  } else if (layer.type == "dense") {
    weight_rows_ = layer.dense.out_features;
    weight_cols_ = in_features;
    channels_ = weight_rows_;
    parameter_count_ = weight_rows_ * weight_cols_ + (layer.dense.bias ? weight_rows_ : 0);
  } else {
    throw unsupported("this layer type");
  }
  if (parameter_count_ != layer.parameters) {
    throw Error("internal: layer '" + layer.name + "' has " + std::to_string(layer.parameters) +
                " parameters by its cost declaration but " + std::to_string(parameter_count_) + " in the executor");
  }
}

std::vector<LayerOp> make_layer_ops(const std::vector<Layer>& layers) {
  std::vector<LayerOp> ops;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const bool next_adds = l + 1 < layers.size() && layers[l + 1].type == "conv2d" && layers[l + 1].conv2d.residual_add;
    const bool adds = layers[l].type == "conv2d" && layers[l].conv2d.residual_add;
    if (adds && l == 0) throw Error("layer '" + layers[l].name + "' adds a residual but has no block before it");
    ops.emplace_back(layers[l], next_adds, adds ? layers[l - 1].input_shape : std::vector<std::int64_t>{});
  }
  return ops;
}

Vector LayerOp::initial_parameters(std::uint64_t seed) const {
  // Glorot-uniform weights from a seeded generator; zero biases; gamma 1, beta 0.
  std::mt19937_64 generator(seed);
  const double fan_in = static_cast<double>(weight_cols_);
  const double fan_out = static_cast<double>(conv_ ? weight_rows_ * conv_geometry_.kernel * conv_geometry_.kernel : weight_rows_);
  const double bound = std::sqrt(6.0 / (fan_in + fan_out));
  Vector params = Vector::Zero(parameter_count_);
  const std::int64_t weights = weight_rows_ * weight_cols_;
  for (std::int64_t i = 0; i < weights; ++i) {
    const double unit = static_cast<double>(generator() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    params[i] = static_cast<float>((2 * unit - 1) * bound);
  }
  if (conv_ && layer_.conv2d.batch_norm) {
    const std::int64_t gamma = weights + (layer_.conv2d.bias ? channels_ : 0);
    params.segment(gamma, channels_).setOnes();
  }
  return params;
}

namespace {

ParamLayout layout(std::int64_t rows, std::int64_t cols, std::int64_t channels, bool bias, bool batch_norm) {
  ParamLayout p;
  std::int64_t at = rows * cols;
  if (bias) { p.bias = at; at += channels; }
  if (batch_norm) { p.gamma = at; p.beta = at + channels; }
  return p;
}

Eigen::Map<const Vector> segment_or_empty(const Vector& v, std::int64_t at, std::int64_t n) {
  return at < 0 ? Eigen::Map<const Vector>(nullptr, 0) : Eigen::Map<const Vector>(v.data() + at, n);
}

}  // namespace

ParamLayout LayerOp::parameter_layout() const {
  const bool bias = conv_ ? layer_.conv2d.bias : layer_.dense.bias;
  return layout(weight_rows_, weight_cols_, channels_, bias, conv_ && layer_.conv2d.batch_norm);
}

Activation LayerOp::forward(const Vector& params, const Activation& in, LayerStash& stash,
                            const std::vector<std::int32_t>* labels, double loss_scale, double* loss) const {
  const bool bias = conv_ ? layer_.conv2d.bias : layer_.dense.bias;
  const bool batch_norm = conv_ && layer_.conv2d.batch_norm;
  const ParamLayout at = layout(weight_rows_, weight_cols_, channels_, bias, batch_norm);
  const Eigen::Map<const Matrix> w(params.data(), weight_rows_, weight_cols_);
  const auto b = segment_or_empty(params, at.bias, channels_);
  stash.input = in.main;
  Activation out;
  if (feeds_residual_) out.shortcut = in.main;
  if (!conv_) {
    Matrix z = dense_forward(w, b, in.main);
    if (layer_.dense.loss) {
      if (labels == nullptr) throw Error("internal: loss layer without labels");
      *loss += softmax_cross_entropy(z, *labels, loss_scale, &stash.loss_gradient);
      out.main = Matrix::Zero(1, z.cols());  // what it sends on: nothing but the loss
      return out;
    }
    if (layer_.dense.relu) relu_forward(z);
    stash.activation = z;
    out.main = std::move(z);
    return out;
  }
  const Conv2dSpec& spec = layer_.conv2d;
  Matrix z = conv2d_forward(conv_geometry_, w, b, in.main);
  if (batch_norm) {
    z = batch_norm_forward(channels_, segment_or_empty(params, at.gamma, channels_),
                           segment_or_empty(params, at.beta, channels_), z, stash.batch_norm);
  }
  if (spec.residual_add) {
    if (in.shortcut.rows() != shape_elements({shortcut_geometry_.in_channels, shortcut_geometry_.in_height,
                                               shortcut_geometry_.in_width})) {
      throw Error("internal: residual layer '" + layer_.name + "' without its block input");
    }
    z += shortcut_forward(shortcut_geometry_, in.shortcut);
  }
  if (spec.relu) relu_forward(z);
  if (pooled_) {
    out.main = pool_forward(pool_geometry_, z, &stash.argmax);
    stash.activation = std::move(z);
  } else {
    stash.activation = z;
    out.main = std::move(z);
  }
  return out;
}

Matrix LayerOp::logits(const Vector& params, const Activation& in) const {
  if (conv_ || !layer_.dense.loss) throw Error("internal: logits of a layer without a loss");
  const Eigen::Map<const Matrix> w(params.data(), weight_rows_, weight_cols_);
  return dense_forward(w, segment_or_empty(params, layer_.dense.bias ? weight_rows_ * weight_cols_ : -1, channels_), in.main);
}

Matrix LayerOp::linear_output_gradient(const Vector& params, const LayerStash& stash, const Gradient* out,
                                       Matrix* shortcut_grad, Vector* dgamma, Vector* dbeta) const {
  if (!conv_ && layer_.dense.loss) return stash.loss_gradient;
  if (out == nullptr) throw Error("internal: layer '" + layer_.name + "' backward without its output gradient");
  Matrix grad = out->main;  // at the layer's output
  if (!conv_) return layer_.dense.relu ? relu_backward(stash.activation, grad) : grad;
  const Conv2dSpec& spec = layer_.conv2d;
  if (pooled_) grad = pool_backward(pool_geometry_, grad, stash.argmax);
  if (spec.relu) grad = relu_backward(stash.activation, grad);
  if (spec.residual_add && shortcut_grad != nullptr) *shortcut_grad = shortcut_backward(shortcut_geometry_, grad);
  if (spec.batch_norm) {
    const ParamLayout at = layout(weight_rows_, weight_cols_, channels_, spec.bias, true);
    grad = batch_norm_backward(channels_, segment_or_empty(params, at.gamma, channels_), stash.batch_norm, grad,
                               dgamma, dbeta);
  }
  return grad;
}

Gradient LayerOp::backward_input(const Vector& params, const LayerStash& stash, const Gradient* out,
                                 std::int64_t begin, std::int64_t end) const {
  Matrix shortcut_grad;
  const Matrix dz = linear_output_gradient(params, stash, out, &shortcut_grad, nullptr, nullptr);
  const Eigen::Map<const Matrix> w(params.data(), weight_rows_, weight_cols_);
  const Matrix slice = dz.middleCols(begin, end - begin);
  Gradient in;
  in.first_sample = begin;
  in.main = conv_ ? conv2d_backward_input(conv_geometry_, w, slice) : dense_backward_input(w, slice);
  // This layer's input is a block input: add the gradient the next layer's residual sent back.
  if (feeds_residual_ && out != nullptr && out->shortcut.size() > 0) in.main += out->shortcut.middleCols(begin, end - begin);
  if (shortcut_grad.size() > 0) in.shortcut = shortcut_grad.middleCols(begin, end - begin);
  return in;
}

Vector LayerOp::backward_weight(const Vector& params, const LayerStash& stash, const Gradient* out) const {
  const bool bias = conv_ ? layer_.conv2d.bias : layer_.dense.bias;
  const bool batch_norm = conv_ && layer_.conv2d.batch_norm;
  const ParamLayout at = layout(weight_rows_, weight_cols_, channels_, bias, batch_norm);
  Vector dgamma, dbeta, db;
  const Matrix dz = linear_output_gradient(params, stash, out, nullptr, &dgamma, &dbeta);
  Vector grad = Vector::Zero(parameter_count_);
  Eigen::Map<Matrix> dw(grad.data(), weight_rows_, weight_cols_);
  if (conv_) {
    conv2d_backward_weight(conv_geometry_, stash.input, dz, dw, bias ? &db : nullptr);
  } else {
    dense_backward_weight(stash.input, dz, dw, bias ? &db : nullptr);
  }
  if (bias) grad.segment(at.bias, channels_) = db;
  if (batch_norm) {
    grad.segment(at.gamma, channels_) = dgamma;
    grad.segment(at.beta, channels_) = dbeta;
  }
  return grad;
}

}  // namespace pipetwin::cpu
