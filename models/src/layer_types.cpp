// Analytic costs of each layer type, declared once per type. Multiply-accumulates follow the
// usual GEMM counts; backward = activation gradient (2 x MACs) + weight gradient (2 x MACs), so a
// layer's backward costs twice its forward, as in Megatron-LM's FLOP accounting.
#include <sstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/layer.hpp"

namespace pipetwin {
namespace {

using Shape = std::vector<std::int64_t>;

double d(std::int64_t value) { return static_cast<double>(value); }

void require(bool condition, const std::string& layer, const std::string& message) {
  if (!condition) throw Error("layer '" + layer + "': " + message);
}

// Each product of a layer's sizes, estimated in double before the integer arithmetic, must stay
// below kMaxCountedSize (2^50: a petabyte of fp32).
void require_sizes(const std::string& layer, std::initializer_list<double> sizes) {
  for (const double size : sizes) {
    require(size >= 0 && size < kMaxCountedSize, layer,
            "its sizes reach " + short_number(size) + " (elements, parameters or bytes), beyond the 2^50 that "
            "pipetwin counts; check the layer's dimensions");
  }
}

}  // namespace

Layer dense_rank(const std::string& name, const Shape& input_shape, const DenseSpec& spec,
                 std::int64_t bytes_per_element, std::int64_t ranks, TensorSplit split);

std::int64_t shape_elements(const Shape& shape) {
  double estimate = 1;
  for (const auto extent : shape) estimate *= static_cast<double>(extent);
  if (!(estimate >= 0 && estimate < kMaxCountedSize)) {
    throw Error("a shape of " + shape_to_string(shape) + " has " + short_number(estimate) +
                " elements, beyond the 2^50 that pipetwin counts");
  }
  std::int64_t elements = 1;
  for (const auto extent : shape) elements *= extent;
  return elements;
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream text;
  for (std::size_t i = 0; i < shape.size(); ++i) text << (i ? "x" : "") << shape[i];
  return text.str();
}

Layer conv2d_layer(const std::string& name, const Shape& input_chw, const Conv2dSpec& spec,
                   std::int64_t bytes_per_element) {
  require(input_chw.size() == 3, name, "conv2d needs a CxHxW input, got " +
                                           shape_to_string(input_chw));
  const std::int64_t in_channels = input_chw[0], height = input_chw[1], width = input_chw[2];
  require(spec.out_channels > 0 && spec.kernel > 0 && spec.stride > 0 && spec.padding >= 0 &&
              spec.groups > 0,
          name, "out_channels, kernel, stride and groups must be positive, padding >= 0");
  const double bytes = d(bytes_per_element);
  const double padded = (d(height) + 2 * d(spec.padding)) * (d(width) + 2 * d(spec.padding));
  const double pairs = spec.connections > 0 ? d(spec.connections) : d(spec.out_channels) * d(in_channels);
  require_sizes(name, {d(shape_elements(input_chw)) * bytes, d(spec.out_channels) * padded * bytes,
                       d(spec.kernel) * d(spec.kernel) * pairs * bytes, padded});
  require(in_channels % spec.groups == 0 && spec.out_channels % spec.groups == 0, name,
          "groups must divide the input and output channels");
  const std::int64_t out_h = (height + 2 * spec.padding - spec.kernel) / spec.stride + 1;
  const std::int64_t out_w = (width + 2 * spec.padding - spec.kernel) / spec.stride + 1;
  require(out_h > 0 && out_w > 0, name, "kernel larger than the padded input " +
                                            shape_to_string(input_chw));
  const std::int64_t channel_pairs =
      spec.connections > 0 ? spec.connections : spec.out_channels * (in_channels / spec.groups);
  const std::int64_t conv_out = spec.out_channels * out_h * out_w;  // elements before pooling

  Layer layer;
  layer.name = name;
  layer.element_bytes = bytes_per_element;
  layer.type = "conv2d";
  layer.conv2d = spec;
  layer.input_shape = input_chw;
  layer.forward_macs = d(out_h * out_w * spec.kernel * spec.kernel * channel_pairs);
  layer.parameters = spec.kernel * spec.kernel * channel_pairs + (spec.bias ? spec.out_channels : 0) +
                     (spec.batch_norm ? 2 * spec.out_channels : 0);

  // Element-wise work per conv output element: bias, batch norm, residual add, ReLU.
  const std::int64_t elementwise = (spec.bias ? 1 : 0) + (spec.batch_norm ? 4 : 0) +
                                   (spec.residual_add ? 1 : 0) + (spec.relu ? 1 : 0);
  double pool_flops = 0;
  Shape output{spec.out_channels, out_h, out_w};
  const auto& pool = spec.pool;
  if (pool.kind == "max" || pool.kind == "avg") {
    require(pool.kernel > 0 && pool.stride > 0 && pool.kernel <= out_h && pool.kernel <= out_w,
            name, "pool kernel does not fit the conv output");
    const std::int64_t pool_h = (out_h - pool.kernel) / pool.stride + 1;
    const std::int64_t pool_w = (out_w - pool.kernel) / pool.stride + 1;
    output = {spec.out_channels, pool_h, pool_w};
    pool_flops = d(shape_elements(output) * pool.kernel * pool.kernel);
  } else if (pool.kind == "global-avg") {
    output = {spec.out_channels, 1, 1};
    pool_flops = d(conv_out);
  } else {
    require(pool.kind == "none", name, "pool kind must be none, max, avg or global-avg, got '" +
                                           pool.kind + "'");
  }
  layer.output_shape = output;
  layer.forward_flops = 2 * layer.forward_macs + d(elementwise * conv_out) + pool_flops;
  layer.activation_grad_flops = 2 * layer.forward_macs + d(elementwise * conv_out) + pool_flops;
  layer.weight_grad_flops = 2 * layer.forward_macs + d(((spec.bias ? 1 : 0) +
                                                        (spec.batch_norm ? 2 : 0)) * conv_out);
  layer.param_bytes = layer.parameters * bytes_per_element;
  layer.input_bytes = shape_elements(input_chw) * bytes_per_element;
  layer.output_bytes = shape_elements(output) * bytes_per_element;
  // Kept for backward, as the executors keep it (layer_composition.hpp) and as frameworks do: the
  // input (weight gradient), the conv output after the ReLU (ReLU / pooling), the normalized
  // conv output (batch norm: x-hat, and 1 / std per channel, per microbatch), the argmax of max
  // pooling (one 32-bit index per pooled element).
  layer.stash_bytes = (shape_elements(input_chw) + conv_out * (spec.batch_norm ? 2 : 1)) * bytes_per_element +
                      (pool.kind == "max" ? shape_elements(output) * 4 : 0);
  layer.stash_fixed_bytes = spec.batch_norm ? spec.out_channels * bytes_per_element : 0;
  return layer;
}

Layer dense_layer(const std::string& name, const Shape& input_shape, const DenseSpec& spec,
                  std::int64_t bytes_per_element) {
  return dense_rank(name, input_shape, spec, bytes_per_element, 1, TensorSplit::whole);
}

// One rank's share of a dense layer split over `ranks` by `split` (Megatron-LM's column- and
// row-parallel linear layers): its weights, products and the features it holds are 1/ranks of
// the layer's; a row-parallel layer's bias is whole (added once, after the sum).
Layer dense_rank(const std::string& name, const Shape& input_shape, const DenseSpec& spec,
                 std::int64_t bytes_per_element, std::int64_t ranks, TensorSplit split) {
  require(spec.out_features > 0, name, "out_features must be positive");
  const std::int64_t in = shape_elements(input_shape), out = spec.out_features;
  require(in > 0, name, "empty input");
  require_sizes(name, {d(in) * d(out) * d(bytes_per_element), (d(in) + d(out)) * d(bytes_per_element)});
  Layer layer;
  layer.name = name;
  layer.element_bytes = bytes_per_element;
  layer.type = "dense";
  layer.dense = spec;
  layer.input_shape = input_shape;
  layer.output_shape = {out};
  layer.forward_macs = d(in * out);
  layer.parameters = in * out + (spec.bias ? out : 0);
  // Per output element: bias, ReLU, softmax cross-entropy (exp, sum, divide, log, subtract).
  const std::int64_t elementwise = (spec.bias ? 1 : 0) + (spec.relu ? 1 : 0) + (spec.loss ? 5 : 0);
  layer.forward_flops = 2 * layer.forward_macs + d(elementwise * out);
  layer.activation_grad_flops = 2 * layer.forward_macs + d(elementwise * out);
  layer.weight_grad_flops = 2 * layer.forward_macs + d(spec.bias ? out : 0);
  layer.param_bytes = layer.parameters * bytes_per_element;
  layer.input_bytes = in * bytes_per_element;
  layer.output_bytes = (spec.loss ? 1 : out) * bytes_per_element;
  layer.stash_bytes = (in + out) * bytes_per_element;
  if (split == TensorSplit::whole) {
    layer.tensor_parallel = ranks;
    return layer;
  }
  const std::int64_t divided = split == TensorSplit::columns ? out : in;
  require(divided % ranks == 0, name, std::string("tensor parallelism over ") + std::to_string(ranks) + " ranks needs its " +
                                          (split == TensorSplit::columns ? "output" : "input") + " features (" +
                                          std::to_string(divided) + ") to divide among them");
  require(!(split == TensorSplit::columns && spec.loss), name, "a loss layer cannot be column-parallel");
  layer.tensor_parallel = ranks;
  layer.tensor_split = split;
  const double share = 1.0 / d(ranks);
  layer.forward_macs *= share;
  layer.forward_flops = 2 * layer.forward_macs + d(elementwise * (split == TensorSplit::columns ? out / ranks : out));
  layer.activation_grad_flops = 2 * layer.forward_macs + d(elementwise * (split == TensorSplit::columns ? out / ranks : out));
  layer.weight_grad_flops = 2 * layer.forward_macs + d(spec.bias ? (split == TensorSplit::columns ? out / ranks : out) : 0);
  layer.parameters = in * out / ranks + (spec.bias ? (split == TensorSplit::columns ? out / ranks : out) : 0);
  layer.param_bytes = layer.parameters * bytes_per_element;
  // What a rank keeps: a column-parallel layer its whole input and its output shard, a
  // row-parallel one its input shard and the summed output.
  layer.stash_bytes = (split == TensorSplit::columns ? in + out / ranks : in / ranks + out) * bytes_per_element;
  return layer;
}

// One rank's share of a transformer block split over `ranks` (Megatron-LM): the weight GEMMs,
// attention heads and MLP columns divide; layer norms, dropouts and residual adds do not, unless
// `sequence_parallel` (Korthikanti et al. 2022) splits the sequence among the ranks there.
Layer transformer_block_rank(const std::string& name, const Shape& input_sh, const TransformerBlockSpec& spec,
                             std::int64_t bytes_per_element, std::int64_t ranks, bool sequence_parallel = false) {
  require(input_sh.size() == 2, name, "transformer_block needs a sequence x hidden input, got " +
                                          shape_to_string(input_sh));
  const std::int64_t s = input_sh[0], h = input_sh[1], a = spec.heads, f = spec.ffn_multiplier, t = ranks;
  require(a > 0 && h % a == 0, name, "heads (" + std::to_string(a) +
                                          ") must divide the hidden size (" + std::to_string(h) + ")");
  require(f > 0, name, "ffn_multiplier must be positive");
  require(t >= 1 && a % t == 0, name, "tensor parallelism over " + std::to_string(t) + " ranks needs the heads (" +
                                          std::to_string(a) + ") to divide among them");
  require_sizes(name, {d(34) * d(s) * d(h) * d(bytes_per_element), d(5) * d(a) * d(s) * d(s) * d(bytes_per_element),
                       d(2 * f + 4) * d(h) * d(h) * d(bytes_per_element)});
  // Weight GEMMs: QKV (3h^2), output projection (h^2), MLP (2 f h^2) per token.
  const double weight_macs = d(s * (4 * h * h + 2 * f * h * h)) / d(t);
  // Attention: scores Q K^T and context A V, s^2 h each.
  const double attention_macs = d(2 * s * s * h) / d(t);
  // The sequence's share of the parts outside the tensor-parallel regions (layer norms, dropouts,
  // residual adds): all of it, or 1/t with sequence parallelism.
  const std::int64_t sp = sequence_parallel ? t : 1;
  require(s % sp == 0, name, "sequence parallelism over " + std::to_string(t) + " ranks needs them to divide the sequence (" +
                                 std::to_string(s) + ")");
  const double elementwise = d(5 * a * s * s + 8 * f * s * h) / d(t) + d(16 * s * h + 2 * s * h) / d(sp);
  Layer layer;
  layer.name = name;
  layer.element_bytes = bytes_per_element;
  layer.type = "transformer_block";
  layer.tensor_parallel = t;
  layer.input_shape = input_sh;
  layer.output_shape = input_sh;
  layer.forward_macs = weight_macs + attention_macs;
  // QKV and fc1 (and their biases) split by columns, proj and fc2 by rows (their biases whole),
  // two layer norms whole.
  layer.parameters = (4 * h * h + 2 * f * h * h + 3 * h + f * h) / t + h + h + 4 * h;
  layer.forward_flops = 2 * layer.forward_macs + elementwise;
  // The attention products have no weights: both of their gradients are activation gradients.
  layer.activation_grad_flops = 2 * weight_macs + 4 * attention_macs + elementwise;
  layer.weight_grad_flops = 2 * weight_macs;
  layer.param_bytes = layer.parameters * bytes_per_element;
  layer.sequence_parallel = sequence_parallel && t > 1;
  // A rank's input and output: the whole sequence, or its 1/t with sequence parallelism (what a
  // stage sends the next and what block recomputation keeps).
  layer.input_bytes = s * h * bytes_per_element / sp;
  layer.output_bytes = s * h * bytes_per_element / sp;
  // Korthikanti et al. 2022: 34 s h + 5 a s^2 bytes per sample at 2-byte activations, and with
  // tensor parallelism over t ranks s h (10 + 24 / t) + 5 a s^2 / t, or s h 34 / t + 5 a s^2 / t
  // with sequence parallelism (the 10 s h outside the tensor-parallel regions split too). The
  // 5 a s^2 are the attention core's (scores, softmax, its dropout mask and output): selective
  // recomputation drops them and runs Q K^T, the softmax, the dropout and A V again (the two
  // products' 4 s^2 h FLOPs and the 5 a s^2 element-wise ones counted above).
  layer.transformer = spec;
  const std::int64_t linear_bytes = (10 * s * h / sp + 24 * s * h / t) * bytes_per_element / 2;
  if (spec.flash_attention) {
    // FlashAttention keeps no s x s tensor: only its output (counted in the 34 s h) and one fp32
    // log-sum-exp per head and position; its backward recomputes the scores (Dao et al. 2022).
    layer.stash_bytes = linear_bytes + 4 * a * s / t;
    return layer;
  }
  layer.selective_stash_bytes = 5 * a * s * s / t * bytes_per_element / 2;
  layer.stash_bytes = linear_bytes + layer.selective_stash_bytes;
  layer.selective_recompute_flops = 2 * attention_macs + d(5 * a * s * s) / d(t);
  return layer;
}

// Megatron-LM's vocab-parallel embedding: each of `ranks` holds 1 / ranks of the token table's
// rows (the vocabulary padded to a multiple of the ranks); the position table is whole.
Layer embedding_rank(const std::string& name, const Shape& input_s, const EmbeddingSpec& spec,
                     std::int64_t bytes_per_element, std::int64_t ranks) {
  require(input_s.size() == 1, name, "embedding needs a sequence of token ids as input");
  require(spec.vocab > 0 && spec.hidden > 0, name, "vocab and hidden must be positive");
  const std::int64_t s = input_s[0], h = spec.hidden;
  require_sizes(name, {(d(spec.vocab) + d(s)) * d(h) * d(bytes_per_element)});
  Layer layer;
  layer.name = name;
  layer.element_bytes = bytes_per_element;
  layer.type = "embedding";
  layer.vocab = spec.vocab;
  layer.input_shape = input_s;
  layer.output_shape = {s, h};
  layer.tensor_parallel = ranks;
  layer.parameters = ((spec.vocab + ranks - 1) / ranks + s) * h;  // token and position embeddings
  layer.forward_flops = d(s * h);           // adding the position embedding
  layer.activation_grad_flops = 0;          // token ids have no gradient
  layer.weight_grad_flops = d(2 * s * h);   // scatter-add into both tables
  layer.param_bytes = layer.parameters * bytes_per_element;
  layer.input_bytes = s * 4;  // int32 token ids
  layer.output_bytes = s * h * bytes_per_element;
  layer.stash_bytes = s * 4;
  return layer;
}

// The LM head's logits split by vocabulary columns over `ranks` (vocab-parallel cross entropy);
// the final layer norm is whole on each.
Layer lm_head_rank(const std::string& name, const Shape& input_sh, const LmHeadSpec& spec,
                   std::int64_t bytes_per_element, std::int64_t ranks) {
  require(input_sh.size() == 2, name, "lm_head needs a sequence x hidden input");
  require(spec.vocab > 0, name, "vocab must be positive");
  const std::int64_t s = input_sh[0], h = input_sh[1], v = (spec.vocab + ranks - 1) / ranks;  // this rank's
  require_sizes(name, {(d(h) + 2) * d(v) * d(bytes_per_element), d(s) * (d(h) + d(v)) * d(bytes_per_element)});
  Layer layer;
  layer.name = name;
  layer.element_bytes = bytes_per_element;
  layer.type = "lm_head";
  layer.vocab = spec.vocab;
  layer.tensor_parallel = ranks;
  layer.input_shape = input_sh;
  layer.output_shape = {1};
  layer.forward_macs = d(s * h * v);
  layer.parameters = h * v + 2 * h;  // logits (untied) and the final layer norm
  const double elementwise = d(8 * s * h + 5 * s * v);
  layer.forward_flops = 2 * layer.forward_macs + elementwise;
  layer.activation_grad_flops = 2 * layer.forward_macs + elementwise;
  layer.weight_grad_flops = 2 * layer.forward_macs;
  layer.param_bytes = layer.parameters * bytes_per_element;
  layer.input_bytes = s * h * bytes_per_element;
  layer.output_bytes = bytes_per_element;  // the loss
  layer.stash_bytes = (s * h + s * v) * bytes_per_element;
  return layer;
}

Layer transformer_block_layer(const std::string& name, const Shape& input_sh, const TransformerBlockSpec& spec,
                              std::int64_t bytes_per_element) {
  return transformer_block_rank(name, input_sh, spec, bytes_per_element, 1);
}

Layer embedding_layer(const std::string& name, const Shape& input_s, const EmbeddingSpec& spec,
                      std::int64_t bytes_per_element) {
  return embedding_rank(name, input_s, spec, bytes_per_element, 1);
}

Layer lm_head_layer(const std::string& name, const Shape& input_sh, const LmHeadSpec& spec,
                    std::int64_t bytes_per_element) {
  return lm_head_rank(name, input_sh, spec, bytes_per_element, 1);
}

Layer tensor_parallel_layer(const Layer& layer, std::int64_t ranks, TensorSplit dense_split, bool sequence_parallel) {
  if (ranks < 1) throw Error("tensor parallelism needs at least one rank, got " + std::to_string(ranks));
  Layer split;
  if (layer.type == "dense") {
    split = dense_rank(layer.name, layer.input_shape, layer.dense, layer.element_bytes, ranks, dense_split);
  } else if (layer.type == "transformer_block") {
    split = transformer_block_rank(layer.name, layer.input_shape, layer.transformer, layer.element_bytes, ranks,
                                   sequence_parallel);
  } else if (layer.type == "embedding") {
    split = embedding_rank(layer.name, layer.input_shape, {layer.vocab, layer.output_shape.at(1)}, layer.element_bytes, ranks);
  } else if (layer.type == "lm_head") {
    split = lm_head_rank(layer.name, layer.input_shape, {layer.vocab}, layer.element_bytes, ranks);
  } else if (ranks == 1) {
    return layer;
  } else {
    throw Error("layer '" + layer.name + "' (" + layer.type + ") cannot be split tensor-parallel: only transformer "
                "blocks, embeddings and LM heads can (a gpt model)");
  }
  // What the network set beside the layer's own costs.
  split.shortcut_bytes = layer.shortcut_bytes;
  split.cut_allowed_after = layer.cut_allowed_after;
  if (layer.activation_grad_flops == 0) split.activation_grad_flops = 0;
  return split;
}

std::vector<TensorParallelAllReduce> tensor_parallel_all_reduces(const Layer& layer, TaskKind kind) {
  if (layer.tensor_parallel <= 1 || kind == TaskKind::BW || kind == TaskKind::U) return {};
  const bool forward = kind == TaskKind::F || kind == TaskKind::RC;
  const std::int64_t activation = shape_elements(layer.input_shape.size() == 2 ? layer.input_shape : layer.output_shape) *
                                  layer.element_bytes;  // s x h
  std::vector<TensorParallelAllReduce> all;
  if (layer.type == "dense") {
    const bool backward_input = kind == TaskKind::BA || kind == TaskKind::B;
    if (layer.tensor_split == TensorSplit::rows && forward) {
      all.push_back({1, shape_elements(layer.output_shape) * layer.element_bytes});
    }
    if (layer.tensor_split == TensorSplit::columns && backward_input) {
      all.push_back({1, shape_elements(layer.input_shape) * layer.element_bytes});
    }
  } else if (layer.type == "transformer_block") {
    all.push_back({2, activation});  // forward: proj and fc2 outputs; backward: qkv and fc1 input gradients
  } else if (layer.type == "embedding" && forward) {
    all.push_back({1, activation});
  } else if (layer.type == "lm_head") {
    if (forward) all.push_back({3, layer.input_shape[0] * 4});  // per token, fp32: max, sum, target logit
    if (!forward || kind == TaskKind::B) all.push_back({1, activation});
  }
  return all;
}

}  // namespace pipetwin
