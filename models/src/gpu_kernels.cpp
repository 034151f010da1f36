// Kernel lists per layer type and task kind (gpu_kernels.hpp). Shapes follow Megatron-LM's GPT
// (Shoeybi et al. 2019; its fused scale-mask-softmax, bias-GELU and bias-dropout-add kernels) and
// cuDNN's implicit-GEMM convolutions; a GEMM's backward is its data gradient dX = dY W^T (BA) and
// its weight gradient dW = X^T dY (BW). Element-wise kernels move what they read and write once.
#include "pipetwin/models/gpu_kernels.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

using Kernels = std::vector<GpuKernel>;

void gemm(Kernels& out, const char* name, double m, double n, double k, double batch = 1, double causal = 1) {
  GpuKernel kernel;
  kernel.name = name;
  kernel.is_gemm = true;
  kernel.gemm = {m, n, k, batch};
  kernel.causal = causal;
  out.push_back(kernel);
}

void memory(Kernels& out, const char* name, double bytes, double flops = 0) {
  GpuKernel kernel;
  kernel.name = name;
  kernel.bytes = bytes;
  kernel.flops = flops;
  out.push_back(kernel);
}

// A weight GEMM Y[rows x out] = X[rows x in] W[in x out]: forward, data gradient, weight gradient.
struct Linear {
  const char* name;
  const char* dgrad;
  const char* wgrad;
  double in, out;
};

void linear(Kernels& k, TaskKind kind, const Linear& l, double rows) {
  if (kind == TaskKind::BA) {
    gemm(k, l.dgrad, rows, l.in, l.out);
  } else if (kind == TaskKind::BW) {
    gemm(k, l.wgrad, l.in, l.out, rows);
  } else {
    gemm(k, l.name, rows, l.out, l.in);
  }
}

// One transformer block (pre-layer-norm GPT, Megatron-LM). T = tokens in the microbatch.
Kernels transformer_kernels(const Layer& layer, TaskKind kind, double b, double e) {
  const double s = static_cast<double>(layer.input_shape[0]);
  const double h = static_cast<double>(layer.input_shape[1]);
  // Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): one rank of tp holds a / tp heads
  // and f / tp of the MLP (QKV and fc1 split by columns, proj and fc2 by rows); the layer norms,
  // dropouts and residual adds run whole on every rank, or on 1/tp of the tokens with sequence
  // parallelism (Korthikanti et al. 2022).
  const double tp = static_cast<double>(layer.tensor_parallel);
  const double outside = layer.sequence_parallel ? tp : 1;  // divides the tokens outside the TP regions
  const double heads = static_cast<double>(layer.transformer.heads);
  const double a = heads / tp;  // this rank's heads
  const double f = static_cast<double>(layer.transformer.ffn_multiplier) * h / tp;  // its MLP width
  const double d = h / heads, t = b * s;
  const double scores = b * a * s * s;  // elements of the s x s attention tensors
  const bool forward = kind == TaskKind::F || kind == TaskKind::RC;
  const Linear qkv{"qkv", "qkv.dgrad", "qkv.wgrad", h, 3 * h / tp};
  const Linear proj{"proj", "proj.dgrad", "proj.wgrad", h / tp, h};
  const Linear fc1{"fc1", "fc1.dgrad", "fc1.wgrad", h, f};
  const Linear fc2{"fc2", "fc2.dgrad", "fc2.wgrad", f, h};
  Kernels k;
  if (kind == TaskKind::BW) {
    // Weight gradients, and the biases' and layer norms' sums over the tokens.
    for (const Linear& l : {qkv, proj, fc1, fc2}) {
      linear(k, kind, l, t);
      memory(k, "bias.wgrad", t * l.out * e);
    }
    memory(k, "layernorm.wgrad", 2 * t * h * e / outside);
    return k;
  }
  // Layer norm 1: read x, write y (and per-token statistics).
  memory(k, forward ? "layernorm1" : "layernorm1.dgrad", (forward ? 2 : 4) * t * h * e / outside);
  linear(k, kind, qkv, t);
  if (layer.transformer.flash_attention) {
    // One kernel: Q K^T and A V (2 products of s x s x d), causal; the backward recomputes the
    // scores and forms dV, dP, dQ and dK (5 products; Dao et al. 2022).
    gemm(k, forward ? "flash_attention" : "flash_attention.dgrad", s, s, (forward ? 2 : 5) * d, b * a, 0.5);
  } else if (forward) {
    gemm(k, "scores", s, s, d, b * a);                  // Q K^T
    memory(k, "scale_mask_softmax", 2 * scores * e);    // fused (Megatron FusedScaleMaskSoftmax)
    memory(k, "attention_dropout", scores * (2 * e + 1));  // and its 1-byte mask
    gemm(k, "context", s, d, s, b * a);                 // A V
    memory(k, "context.transpose", 2 * t * a * d * e);   // [b, a, s, d] -> [s, b, a d], contiguous
  } else {
    memory(k, "context.transpose.dgrad", 2 * t * a * d * e);
    gemm(k, "context.dgrad_a", s, s, d, b * a);         // dA = dC V^T
    gemm(k, "context.dgrad_v", s, d, s, b * a);         // dV = A^T dC
    memory(k, "attention_dropout.dgrad", scores * (2 * e + 1));
    memory(k, "softmax.dgrad", 3 * scores * e);         // reads y and dy, writes dx
    gemm(k, "scores.dgrad_q", s, d, s, b * a);          // dQ = dS K
    gemm(k, "scores.dgrad_k", s, d, s, b * a);          // dK = dS^T Q
  }
  linear(k, kind, proj, t);
  // Bias, dropout and residual add in one kernel: reads two inputs, writes the sum and a mask.
  memory(k, forward ? "bias_dropout_add" : "bias_dropout_add.dgrad", t * h * (3 * e + 1) / outside);
  memory(k, forward ? "layernorm2" : "layernorm2.dgrad", (forward ? 2 : 4) * t * h * e / outside);
  linear(k, kind, fc1, t);
  memory(k, forward ? "bias_gelu" : "bias_gelu.dgrad", (forward ? 2 : 3) * t * f * e);
  linear(k, kind, fc2, t);
  memory(k, forward ? "bias_dropout_add" : "bias_dropout_add.dgrad", t * h * (3 * e + 1) / outside);
  if (!forward) memory(k, "residual.dgrad", 3 * t * h * e / outside);  // the two branches' gradients summed
  return k;
}

// Token and position embeddings (Megatron-LM's embedding: lookup, add, dropout).
Kernels embedding_kernels(const Layer& layer, TaskKind kind, double b, double e) {
  const double s = static_cast<double>(layer.input_shape[0]);
  const double h = static_cast<double>(layer.output_shape[1]);
  const double v = static_cast<double>(layer.vocab) / static_cast<double>(layer.tensor_parallel);  // this rank's rows
  const double t = b * s;
  Kernels k;
  if (kind == TaskKind::BA) return k;  // token ids have no gradient
  if (kind == TaskKind::BW) {
    memory(k, "embedding.dropout.dgrad", t * h * (2 * e + 1));
    memory(k, "embedding.zero_grad", v * h * e);           // the dense table gradient, cleared
    memory(k, "embedding.wgrad", 3 * t * h * e);           // scatter-add of the rows
    memory(k, "position_embedding.wgrad", 2 * t * h * e);
    return k;
  }
  memory(k, "embedding.lookup", 2 * t * h * e + t * 8);    // int64 ids in, rows gathered out
  memory(k, "position_embedding.add", 3 * t * h * e);
  memory(k, "embedding.dropout", t * h * (2 * e + 1));
  return k;
}

// Final layer norm, logits against the vocabulary and the cross-entropy loss (computed in fp32
// from the logits, as Megatron-LM's vocab-parallel cross entropy does).
Kernels lm_head_kernels(const Layer& layer, TaskKind kind, double b, double e) {
  const double s = static_cast<double>(layer.input_shape[0]);
  const double h = static_cast<double>(layer.input_shape[1]);
  const double v = static_cast<double>(layer.vocab) / static_cast<double>(layer.tensor_parallel);  // this rank's share
  const double t = b * s;
  const Linear logits{"logits", "logits.dgrad", "logits.wgrad", h, v};
  Kernels k;
  if (kind == TaskKind::BW) {
    linear(k, kind, logits, t);
    memory(k, "layernorm.wgrad", 2 * t * h * e);
    return k;
  }
  if (kind == TaskKind::BA) {
    memory(k, "cross_entropy.dgrad", 2 * t * v * 4);      // softmax - one-hot in place, times dloss
    memory(k, "logits.to_fp32.dgrad", t * v * (4 + e));   // back to the logits' type
    linear(k, kind, logits, t);
    memory(k, "layernorm.dgrad", 4 * t * h * e);
    return k;
  }
  memory(k, "layernorm", 2 * t * h * e);
  linear(k, kind, logits, t);
  // Megatron-LM's vocab-parallel cross entropy on fp32 logits: the cast, the row maximum, the
  // shift and the exponential in place, the row sum, and the softmax kept for the backward.
  memory(k, "logits.to_fp32", t * v * (e + 4));
  memory(k, "cross_entropy.max", t * v * 4);
  memory(k, "cross_entropy.shift", 2 * t * v * 4);
  memory(k, "cross_entropy.exp", 2 * t * v * 4);
  memory(k, "cross_entropy.sum", t * v * 4);
  memory(k, "cross_entropy.softmax", 2 * t * v * 4);
  return k;
}

// Convolution as cuDNN's implicit GEMM, with bias, batch norm, residual add, ReLU and pooling as
// their own kernels (PyTorch eager launches them apart).
Kernels conv2d_kernels(const Layer& layer, TaskKind kind, double b, double e) {
  const Conv2dSpec& c = layer.conv2d;
  const double cin = static_cast<double>(layer.input_shape[0]);
  const double in_hw = static_cast<double>(layer.input_shape[1] * layer.input_shape[2]);
  const double out_h = static_cast<double>((layer.input_shape[1] + 2 * c.padding - c.kernel) / c.stride + 1);
  const double out_w = static_cast<double>((layer.input_shape[2] + 2 * c.padding - c.kernel) / c.stride + 1);
  const double cout = static_cast<double>(c.out_channels), groups = static_cast<double>(c.groups);
  const double taps = static_cast<double>(c.kernel * c.kernel);
  const double conv_out = b * cout * out_h * out_w;             // elements before pooling
  const double pooled = b * static_cast<double>(shape_elements(layer.output_shape));
  Kernels k;
  if (kind == TaskKind::BW) {
    gemm(k, "conv.wgrad", cout / groups, cin / groups * taps, b * out_h * out_w, groups);
    if (c.bias) memory(k, "bias.wgrad", conv_out * e);
    if (c.batch_norm) memory(k, "batch_norm.wgrad", 2 * conv_out * e);
    return k;
  }
  const bool forward = kind != TaskKind::BA;
  if (forward) {
    gemm(k, "conv", b * out_h * out_w, cout / groups, cin / groups * taps, groups);
    if (c.bias && !c.batch_norm) memory(k, "bias", 2 * conv_out * e);
    if (c.batch_norm) memory(k, "batch_norm", 4 * conv_out * e);  // statistics pass, then normalise
    if (c.residual_add) memory(k, "residual_add", 3 * conv_out * e);
    if (c.relu) memory(k, "relu", 2 * conv_out * e);
    if (c.pool.kind != "none") memory(k, "pool", conv_out * e + pooled * e);
    return k;
  }
  if (c.pool.kind != "none") memory(k, "pool.dgrad", pooled * e + 2 * conv_out * e);
  if (c.relu) memory(k, "relu.dgrad", 3 * conv_out * e);
  if (c.batch_norm) memory(k, "batch_norm.dgrad", 5 * conv_out * e);  // reduction pass, then dx
  // Data gradient: an implicit GEMM over the input pixels; a strided convolution's runs as stride^2
  // phases, each over its share of the taps, so it does the forward's multiply-accumulates.
  gemm(k, "conv.dgrad", b * in_hw, cin / groups, cout / groups * taps * (out_h * out_w) / in_hw, groups);
  return k;
}

Kernels dense_kernels(const Layer& layer, TaskKind kind, double b, double e) {
  const DenseSpec& spec = layer.dense;
  // A tensor-parallel rank's share: a column-parallel layer's outputs, a row-parallel one's inputs.
  const double ranks = static_cast<double>(layer.tensor_parallel);
  const double in = static_cast<double>(shape_elements(layer.input_shape)) /
                    (layer.tensor_split == TensorSplit::rows ? ranks : 1.0);
  const double out = static_cast<double>(spec.out_features) / (layer.tensor_split == TensorSplit::columns ? ranks : 1.0);
  const Linear l{"dense", "dense.dgrad", "dense.wgrad", in, out};
  Kernels k;
  if (kind == TaskKind::BW) {
    linear(k, kind, l, b);
    if (spec.bias) memory(k, "bias.wgrad", b * out * e);
    return k;
  }
  const bool forward = kind != TaskKind::BA;
  if (!forward && spec.loss) memory(k, "cross_entropy.dgrad", 2 * b * out * e);
  if (!forward && spec.relu) memory(k, "relu.dgrad", 3 * b * out * e);
  linear(k, kind, l, b);
  if (forward && spec.relu) memory(k, "relu", 2 * b * out * e);
  if (forward && spec.loss) memory(k, "cross_entropy", 3 * b * out * e);
  return k;
}

// The weight gradient added into the step's sum (PyTorch's AccumulateGrad: read both, write one),
// one kernel per weight tensor. A step's first microbatch only assigns it; every BW is priced as
// an accumulation.
void accumulate_gradients(Kernels& k, const Layer& layer, double e, int tensors) {
  if (layer.parameters <= 0) return;
  const double bytes = 3 * static_cast<double>(layer.parameters) * e;
  for (int i = 0; i < tensors; ++i) memory(k, "grad_accumulate", bytes / tensors);
}

int weight_tensors(const Layer& layer) {
  if (layer.type == "transformer_block") return 12;  // 4 weights, 4 biases, 2 x 2 layer-norm vectors
  if (layer.type == "embedding") return 2;           // token and position tables
  if (layer.type == "lm_head") return 3;              // logits, final layer norm's 2 vectors
  if (layer.type == "conv2d") {
    return 1 + (layer.conv2d.bias ? 1 : 0) + (layer.conv2d.batch_norm ? 2 : 0);
  }
  return 1 + (layer.dense.bias ? 1 : 0);
}

Kernels kernels_of(const Layer& layer, TaskKind kind, double b, double e) {
  if (layer.type == "transformer_block") return transformer_kernels(layer, kind, b, e);
  if (layer.type == "embedding") return embedding_kernels(layer, kind, b, e);
  if (layer.type == "lm_head") return lm_head_kernels(layer, kind, b, e);
  if (layer.type == "conv2d") return conv2d_kernels(layer, kind, b, e);
  if (layer.type == "dense") return dense_kernels(layer, kind, b, e);
  throw Error("layer '" + layer.name + "': the operator cost model has no kernels for type " + layer.type);
}

}  // namespace

std::vector<GpuKernel> layer_kernels(const Layer& layer, TaskKind kind, std::int64_t samples,
                                     std::int64_t element_bytes) {
  if (kind != TaskKind::F && kind != TaskKind::RC && kind != TaskKind::BA && kind != TaskKind::BW) {
    throw Error(std::string("no GPU kernels for task kind ") + to_string(kind));
  }
  if (kind == TaskKind::BA && layer.activation_grad_flops <= 0) return {};
  const double b = static_cast<double>(samples), e = static_cast<double>(element_bytes);
  Kernels kernels = kernels_of(layer, kind, b, e);
  if (kind == TaskKind::BW) accumulate_gradients(kernels, layer, e, weight_tensors(layer));
  return kernels;
}

double layer_host_operators(const Layer& layer, TaskKind kind, std::size_t kernels) {
  if (kernels == 0) return 0;
  if (layer.type != "transformer_block") return static_cast<double>(kernels);
  // A GPT block as Megatron-DeepSpeed runs it, in plain eager operators' worth of host time
  // (host_overhead.py, PyTorch 2.15: the plain block's 58 forward, 59 recompute and 91 backward
  // operators times the time Megatron-DeepSpeed's structure took over the plain block's, timed
  // in turns; the median of three runs on 2026-11-24: forward 80.1/71.5/76.9, recompute
  // 67.6/61.6/67.5, backward 136.1/160.0/137.6). The forward is the activation checkpoint's (its
  // Function and RNG states around the block under no_grad); a block that is not checkpointed is
  // charged the same. The backward's split follows the kernel lists (BA 17 kernels, BW 9).
  constexpr double kForward = 77, kRecompute = 67, kBackward = 138;
  switch (kind) {
    case TaskKind::F: return kForward;
    case TaskKind::RC: return kRecompute;
    case TaskKind::BA: return kBackward * 17.0 / 26.0;
    case TaskKind::BW: return kBackward * 9.0 / 26.0;
    default: return static_cast<double>(kernels);
  }
}

double layer_host_seconds(const GpuSpec& gpu, const Layer& layer, TaskKind kind, std::size_t kernels) {
  return layer_host_operators(layer, kind, kernels) * gpu.dispatch_s + static_cast<double>(kernels) * gpu.launch_s;
}

}  // namespace pipetwin
