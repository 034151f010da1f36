// Network totals and the builder that chains layers by shape.
#include "pipetwin/models/network.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin {

double Network::forward_macs_per_sample() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.forward_macs;
  return total;
}

std::int64_t Network::parameters() const {
  std::int64_t total = 0;
  for (const auto& layer : layers) total += layer.parameters;
  return total;
}

std::vector<int> Network::allowed_cuts() const {
  std::vector<int> cuts;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    if (layers[i].cut_allowed_after) cuts.push_back(static_cast<int>(i));
  }
  return cuts;
}

NetworkBuilder::NetworkBuilder(std::string name, std::vector<std::int64_t> input_shape,
                               std::int64_t batch, std::int64_t bytes_per_element)
    : shape_(std::move(input_shape)) {
  if (batch < 1) throw Error("network " + name + ": batch must be at least 1, got " +
                             std::to_string(batch));
  if (bytes_per_element < 1 || bytes_per_element > 64) {
    throw Error("network " + name + ": dtype_bytes must be between 1 and 64, got " + std::to_string(bytes_per_element));
  }
  network_.name = std::move(name);
  network_.batch = batch;
  network_.bytes_per_element = bytes_per_element;
  network_.input_shape = shape_;
}

Network tensor_parallel_network(const Network& network, std::int64_t ranks, bool sequence_parallel) {
  if (ranks == 1) return network;
  if (network.activation_memory != "executor") {
    throw Error("tensor parallelism and activation_memory=" + network.activation_memory +
                " do not combine: the framework's saved tensors were measured unsplit");
  }
  Network split = network;
  auto& layers = split.layers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    // Dense layers in Megatron-LM's MLP pairs: column-parallel, then row-parallel (no cut between
    // them: the shard does not leave its rank); one left over runs whole on every rank.
    if (layers[l].type == "dense" && !layers[l].dense.loss && l + 1 < layers.size() && layers[l + 1].type == "dense") {
      layers[l] = tensor_parallel_layer(layers[l], ranks, TensorSplit::columns);
      layers[l].cut_allowed_after = false;
      layers[l + 1] = tensor_parallel_layer(layers[l + 1], ranks, TensorSplit::rows);
      ++l;
      continue;
    }
    layers[l] = tensor_parallel_layer(layers[l], ranks, TensorSplit::whole, sequence_parallel);
  }
  return split;
}

NetworkBuilder& NetworkBuilder::add(Layer layer) {
  // Checked as layers come, not once they are all there: gpt's layers=100000000 took minutes
  // (and gigabytes) to build before the count was looked at.
  if (network_.layers.size() >= kMaxLayers) {
    throw Error("network " + network_.name + " has more than " + std::to_string(kMaxLayers) + " layers");
  }
  if (network_.layers.empty()) layer.activation_grad_flops = 0;  // no gradient for the input
  shape_ = layer.output_shape;
  network_.layers.push_back(std::move(layer));
  return *this;
}

NetworkBuilder& NetworkBuilder::conv2d(const std::string& name, const Conv2dSpec& spec) {
  return add(conv2d_layer(name, shape_, spec, bytes_per_element()));
}

NetworkBuilder& NetworkBuilder::dense(const std::string& name, const DenseSpec& spec) {
  return add(dense_layer(name, shape_, spec, bytes_per_element()));
}

NetworkBuilder& NetworkBuilder::transformer_block(const std::string& name,
                                                  const TransformerBlockSpec& spec) {
  return add(transformer_block_layer(name, shape_, spec, bytes_per_element()));
}

NetworkBuilder& NetworkBuilder::embedding(const std::string& name, const EmbeddingSpec& spec) {
  return add(embedding_layer(name, shape_, spec, bytes_per_element()));
}

NetworkBuilder& NetworkBuilder::lm_head(const std::string& name, const LmHeadSpec& spec) {
  return add(lm_head_layer(name, shape_, spec, bytes_per_element()));
}

void NetworkBuilder::forbid_cut_after_last() {
  if (!network_.layers.empty()) network_.layers.back().cut_allowed_after = false;
}

Network NetworkBuilder::build() {
  if (network_.layers.empty()) throw Error("network " + network_.name + " has no layers");
  // Inside a residual block, the block's input travels beside each output to the layer that adds it.
  auto& layers = network_.layers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (feeds_residual(layers, l)) layers[l].shortcut_bytes = layers[l].input_bytes;
  }
  // A minibatch's bytes of every layer stay below 2^50 (kMaxCountedSize; the engines' bound on
  // sums is 2^60).
  const double batch = static_cast<double>(network_.batch);
  double total = 0;
  for (const auto& layer : network_.layers) {
    const double per_sample =
        static_cast<double>(layer.stash_bytes + layer.input_bytes + layer.output_bytes + layer.shortcut_bytes);
    total += per_sample * batch + static_cast<double>(layer.param_bytes + layer.stash_fixed_bytes);
  }
  if (!(total < kMaxCountedSize)) {
    throw Error("network " + network_.name + ": a minibatch of " + std::to_string(network_.batch) +
                " samples needs " + short_number(total) + " bytes of activations and parameters, beyond the 2^50 that "
                "pipetwin counts; check the batch and the layers' sizes");
  }
  network_.layers.back().cut_allowed_after = false;
  return network_;
}

}  // namespace pipetwin
