// A network: an ordered chain of layers with shapes and analytic costs, plus its batch size.
// Built-in networks are created by name (network_registry.hpp); user networks come from JSON.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipetwin/models/layer.hpp"
#include "pipetwin/models/optimizer.hpp"

namespace pipetwin {

// Whether layers[l]'s input is a residual block's input that the next layer adds to its output
// (so it travels beside layers[l]'s output). The one rule of the cost model and the executors.
inline bool feeds_residual(const std::vector<Layer>& layers, std::size_t l) {
  return l + 1 < layers.size() && layers[l + 1].type == "conv2d" && layers[l + 1].conv2d.residual_add;
}

struct Network {
  std::string name;
  std::int64_t batch = 1;               // samples per minibatch (one optimizer step)
  std::int64_t bytes_per_element = 4;   // fp32
  std::vector<std::int64_t> input_shape;  // per sample
  std::vector<Layer> layers;
  OptimizerSpec optimizer;              // how its weights are updated (and mixed precision)
  // Whose convention the layers' stash_bytes follow: "executor" (pipetwin's executors) or
  // "pytorch" (PyTorch's saved tensors; framework_memory.hpp).
  std::string activation_memory = "executor";

  std::size_t size() const { return layers.size(); }
  double forward_macs_per_sample() const;
  std::int64_t parameters() const;
  // The sum of one per-layer size over layers [first, last], e.g. layer_sum(f, l, &Layer::param_bytes).
  std::int64_t layer_sum(int first, int last, std::int64_t Layer::*size) const {
    std::int64_t sum = 0;
    for (int l = first; l <= last; ++l) sum += layers[static_cast<std::size_t>(l)].*size;
    return sum;
  }
  // Per sample, what goes from layer l to layer l + 1 in the forward: its output and, inside a
  // residual block, the block's input beside it (Layer::shortcut_bytes). The gradient that comes
  // back from l + 1 is as large.
  std::int64_t activation_bytes_after(int l) const {
    const Layer& layer = layers[static_cast<std::size_t>(l)];
    return layer.output_bytes + layer.shortcut_bytes;
  }
  // Per sample, the gradient at layer l's output that its backward holds: as above, and nothing
  // for the loss layer (its gradient is part of its stash).
  std::int64_t output_gradient_bytes(int l) const {
    const Layer& layer = layers[static_cast<std::size_t>(l)];
    return layer.type == "dense" && layer.dense.loss ? 0 : activation_bytes_after(l);
  }
  // Bytes of the stashes of layers [first, last] for a microbatch of `samples`.
  std::int64_t stash_bytes(int first, int last, std::int64_t samples) const {
    return layer_sum(first, last, &Layer::stash_bytes) * samples + layer_sum(first, last, &Layer::stash_fixed_bytes);
  }
  // Per sample, what recompute=blocks drops after the forward and its RC makes again: each
  // transformer block's stash but its input (Megatron-LM's checkpoint of every block).
  std::int64_t block_recompute_bytes(int first, int last) const {
    std::int64_t bytes = 0;
    for (int l = first; l <= last; ++l) bytes += block_recompute_part(l);
    return bytes;
  }
  // Per sample, the most of it live at once: the backward recomputes one block at a time and is
  // done with its activations before the next (Megatron-LM's checkpointed blocks).
  std::int64_t largest_block_recompute_bytes(int first, int last) const {
    std::int64_t bytes = 0;
    for (int l = first; l <= last; ++l) bytes = std::max(bytes, block_recompute_part(l));
    return bytes;
  }
  std::int64_t block_recompute_part(int l) const {
    const Layer& layer = layers[static_cast<std::size_t>(l)];
    return layer.type == "transformer_block" ? layer.stash_bytes - layer.input_bytes : 0;
  }
  // Layer indices after which a pipeline cut may fall (never inside a residual block, never
  // after the last layer).
  std::vector<int> allowed_cuts() const;
};

// The network as one of `ranks` tensor-parallel ranks holds and runs it (tensor_parallel_layer on
// every layer; consecutive dense layers in column- then row-parallel pairs): its parameters,
// stashes and work are one rank's. Throws for layers that cannot be split, and for
// activation_memory=pytorch (measured unsplit). `sequence_parallel`: Megatron's sequence
// parallelism in every transformer block (Layer::sequence_parallel).
Network tensor_parallel_network(const Network& network, std::int64_t ranks, bool sequence_parallel = false);

// Appends layers while tracking the current output shape; the first layer appended gets no
// activation-gradient work (nothing needs the gradient of the network's input).
class NetworkBuilder {
 public:
  // Partitioning is quadratic in the layers; real networks have at most a few thousand.
  static constexpr std::size_t kMaxLayers = 10000;

  NetworkBuilder(std::string name, std::vector<std::int64_t> input_shape, std::int64_t batch,
                 std::int64_t bytes_per_element);

  const std::vector<std::int64_t>& current_shape() const { return shape_; }
  std::int64_t bytes_per_element() const { return network_.bytes_per_element; }
  NetworkBuilder& add(Layer layer);
  // Convenience wrappers around the layer constructors, fed the current shape.
  NetworkBuilder& conv2d(const std::string& name, const Conv2dSpec& spec);
  NetworkBuilder& dense(const std::string& name, const DenseSpec& spec);
  NetworkBuilder& transformer_block(const std::string& name, const TransformerBlockSpec& spec);
  NetworkBuilder& embedding(const std::string& name, const EmbeddingSpec& spec);
  NetworkBuilder& lm_head(const std::string& name, const LmHeadSpec& spec);
  void forbid_cut_after_last();  // marks the last added layer as inside a residual block
  Network build();               // checks the network is not empty and ends in a loss layer

 private:
  Network network_;
  std::vector<std::int64_t> shape_;
};

}  // namespace pipetwin
