// A layer of a network with its analytic costs, declared once per layer type (layer_types.cpp).
// Costs are per sample; a task multiplies them by its microbatch size. Layers are counted as the
// papers count them: a conv or dense layer with its activation, normalisation and pooling folded in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

struct PoolSpec {
  std::string kind = "none";  // "none", "max", "avg", "global-avg"
  std::int64_t kernel = 2;
  std::int64_t stride = 2;
};

struct Conv2dSpec {
  std::int64_t out_channels = 0;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t groups = 1;
  // Number of (input map, output map) pairs actually connected; 0 = all of them (per group).
  // LeNet-5's C3 uses a sparse table of 60 pairs.
  std::int64_t connections = 0;
  bool bias = true;
  bool batch_norm = false;
  bool relu = true;
  bool residual_add = false;  // adds the residual block's shortcut before the ReLU
  PoolSpec pool;
};

struct DenseSpec {
  std::int64_t out_features = 0;
  bool bias = true;
  bool relu = true;
  bool loss = false;  // softmax cross-entropy on the output (the network's last layer)
};

struct TransformerBlockSpec {
  std::int64_t heads = 1;
  std::int64_t ffn_multiplier = 4;
  // Attention as one fused kernel (FlashAttention: no s x s scores in memory, recomputed in the
  // backward) instead of the scores, softmax, dropout and context kernels.
  bool flash_attention = false;
};

// How a tensor-parallel dense layer is split among its ranks (Megatron-LM's MLP: a column-parallel
// layer followed by a row-parallel one).
enum class TensorSplit {
  whole,    // every rank runs the whole layer
  columns,  // each rank has 1/t of the output features (W's rows here: y = W x); its output is a shard
  rows,     // each rank has 1/t of the input features; the ranks' partial outputs are summed
};

// Sizes pipetwin counts in 64-bit integers (a layer's elements, parameters and bytes; a minibatch's
// bytes over all layers) stay below 2^50, so that sums over layers, samples, microbatches and
// minibatches stay exact and far from overflow.
constexpr double kMaxCountedSize = 1125899906842624.0;  // 2^50

struct Layer {
  std::string name;                     // e.g. "conv1", "stage2.block3.conv2"
  std::string type;                     // "conv2d", "dense", "transformer_block", ...
  std::vector<std::int64_t> input_shape;   // per sample, e.g. {C, H, W}
  std::vector<std::int64_t> output_shape;  // per sample
  double forward_macs = 0;              // GEMM / convolution multiply-accumulates
  double forward_flops = 0;             // 2 * forward_macs + element-wise work
  double activation_grad_flops = 0;     // BA: gradient w.r.t. the layer's input
  double weight_grad_flops = 0;         // BW: gradient w.r.t. the layer's parameters
  std::int64_t parameters = 0;          // count (not per sample)
  std::int64_t element_bytes = 4;       // bytes of one parameter or activation element
  std::int64_t param_bytes = 0;         // parameters * bytes per element
  std::int64_t input_bytes = 0;         // per sample: what the layer reads from the previous one
  std::int64_t output_bytes = 0;        // per sample: what it sends to the next layer
  std::int64_t stash_bytes = 0;         // per sample: kept from forward until backward
  std::int64_t stash_fixed_bytes = 0;   // per microbatch, whatever its samples (batch norm's 1 / std)
  // Per sample: the residual block's input, which travels beside this layer's output to the next
  // layer, which adds it (and its gradient beside the gradient at this output). Set by the network.
  std::int64_t shortcut_bytes = 0;
  // Selective recomputation (recompute=selective; Korthikanti et al. 2022): the part of the stash
  // that is cheap to make again and is dropped after the forward, and the work of making it again
  // right before the backward. 0 for layers with no such part (only attention cores have one).
  std::int64_t selective_stash_bytes = 0;  // per sample, of stash_bytes
  double selective_recompute_flops = 0;    // per sample
  bool cut_allowed_after = true;        // false inside a residual block
  // What the executors run: the spec the layer was built from (the one matching `type`).
  Conv2dSpec conv2d;
  DenseSpec dense;
  TransformerBlockSpec transformer;
  std::int64_t vocab = 0;  // embedding and lm_head: vocabulary size
  // Tensor parallelism: the ranks this layer is split over (Megatron-LM's column and row splits of
  // transformer blocks, vocab-parallel embedding and LM head). Its costs and sizes above are one
  // rank's; the all-reduces between the ranks are tensor_parallel_all_reduces().
  std::int64_t tensor_parallel = 1;
  // Sequence parallelism (Megatron-LM, Korthikanti et al. 2022): with tensor_parallel > 1 a
  // transformer block's layer norms, dropouts and residual adds run on 1/t of the sequence, and
  // its input, output and their activations are 1/t (transformer blocks only).
  bool sequence_parallel = false;
  TensorSplit tensor_split = TensorSplit::whole;  // dense layers
};

struct EmbeddingSpec {
  std::int64_t vocab = 0;
  std::int64_t hidden = 0;
};

struct LmHeadSpec {
  std::int64_t vocab = 0;
};

// Layer constructors: one per type, each declaring the costs of that type once.
// `bytes_per_element` is the size of a parameter or activation element (4 for fp32).
Layer conv2d_layer(const std::string& name, const std::vector<std::int64_t>& input_chw,
                   const Conv2dSpec& spec, std::int64_t bytes_per_element);
Layer dense_layer(const std::string& name, const std::vector<std::int64_t>& input_shape,
                  const DenseSpec& spec, std::int64_t bytes_per_element);
// Input shape {sequence, hidden}.
Layer transformer_block_layer(const std::string& name, const std::vector<std::int64_t>& input_sh,
                              const TransformerBlockSpec& spec, std::int64_t bytes_per_element);
// The same layer as one of `ranks` tensor-parallel ranks holds and runs it: transformer blocks,
// embeddings and LM heads, and dense layers split as `dense_split` says (other layers cannot be
// split and are refused). `sequence_parallel` splits a transformer block's sequence too
// (Layer::sequence_parallel).
Layer tensor_parallel_layer(const Layer& layer, std::int64_t ranks, TensorSplit dense_split = TensorSplit::whole,
                            bool sequence_parallel = false);

// One all-reduce a tensor-parallel layer's task makes its ranks do: `count` of `bytes_per_sample`
// each (times the task's samples).
struct TensorParallelAllReduce {
  int count = 0;
  std::int64_t bytes_per_sample = 0;
};
// What a task of `kind` all-reduces among the layer's ranks (Megatron-LM): a transformer block's
// forward two (after the attention's and the MLP's row-parallel GEMMs), its activation gradient
// two (at the column-parallel inputs); the embedding's forward one; the LM head's forward three
// small ones (the vocab-parallel cross entropy's maximum, sum and target logit) and its activation
// gradient one; a row-parallel dense layer's forward one (its output), a column-parallel one's
// activation gradient one (its input's). None for one rank, or for weight gradients.
std::vector<TensorParallelAllReduce> tensor_parallel_all_reduces(const Layer& layer, TaskKind kind);
// Input shape {sequence} (token ids).
Layer embedding_layer(const std::string& name, const std::vector<std::int64_t>& input_s,
                      const EmbeddingSpec& spec, std::int64_t bytes_per_element);
// Final layer norm, logits and softmax cross-entropy; input shape {sequence, hidden}.
Layer lm_head_layer(const std::string& name, const std::vector<std::int64_t>& input_sh,
                    const LmHeadSpec& spec, std::int64_t bytes_per_element);

std::int64_t shape_elements(const std::vector<std::int64_t>& shape);
std::string shape_to_string(const std::vector<std::int64_t>& shape);  // "3x32x32"

}  // namespace pipetwin
