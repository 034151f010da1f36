// PyTorch's saved tensors per layer (framework_memory.hpp). Per sample, e bytes per element:
//   conv2d  its input, when no earlier layer saved that storage (the network's input; the output
//           of a pooling, of a layer without ReLU); batch norm's input (the convolution's output)
//           and, per microbatch, its saved mean and inverse deviation and running mean and
//           variance (4 x C fp32); the ReLU's output; max pooling's int64 indices (and its input
//           when no ReLU saved it). Average pooling saves its input, which the ReLU already did.
//   dense   its input, as above; the ReLU's output; the loss layer's log-softmax output, its int64
//           target, and (per microbatch) the 4-byte total weight.
#include "pipetwin/models/framework_memory.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {
namespace {

// Whether layer `l` saves the storage it outputs (a ReLU's result, with nothing after it).
bool saves_own_output(const Layer& layer) {
  if (layer.type == "conv2d") return layer.conv2d.relu && layer.conv2d.pool.kind == "none";
  if (layer.type == "dense") return layer.dense.relu && !layer.dense.loss;
  return true;  // other layer types: assume their output is kept (no double count)
}

}  // namespace

void use_pytorch_saved_tensors(Network& network) {
  auto& layers = network.layers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    Layer& layer = layers[l];
    if (layer.type != "conv2d" && layer.type != "dense") continue;
    const std::int64_t e = layer.element_bytes;
    const bool input_saved_before = l > 0 && saves_own_output(layers[l - 1]);
    const std::int64_t input = input_saved_before ? 0 : shape_elements(layer.input_shape) * e;
    if (layer.type == "conv2d") {
      const Conv2dSpec& c = layer.conv2d;
      const std::int64_t out_h = (layer.input_shape[1] + 2 * c.padding - c.kernel) / c.stride + 1;
      const std::int64_t out_w = (layer.input_shape[2] + 2 * c.padding - c.kernel) / c.stride + 1;
      const std::int64_t conv_out = c.out_channels * out_h * out_w;
      const std::int64_t pooled = shape_elements(layer.output_shape);
      std::int64_t saved = input + (c.batch_norm ? conv_out * e : 0) + (c.relu ? conv_out * e : 0);
      if (c.pool.kind == "max") saved += pooled * 8 + (c.relu ? 0 : conv_out * e);
      if ((c.pool.kind == "avg" || c.pool.kind == "global-avg") && !c.relu) saved += conv_out * e;
      layer.stash_bytes = saved;
      layer.stash_fixed_bytes = c.batch_norm ? 4 * c.out_channels * 4 : 0;
    } else {
      const DenseSpec& d = layer.dense;
      const std::int64_t out = d.out_features;
      layer.stash_bytes = input + (d.relu && !d.loss ? out * e : 0) + (d.loss ? out * e + 8 : 0);
      layer.stash_fixed_bytes = d.loss ? 4 : 0;
    }
  }
}

void apply_activation_memory(Network& network, const std::string& convention) {
  if (convention == "pytorch") {
    use_pytorch_saved_tensors(network);
  } else if (convention != "executor") {
    throw Error(unknown_name_message("activation_memory convention", convention, {"executor", "pytorch"}));
  }
  network.activation_memory = convention;
}

}  // namespace pipetwin
