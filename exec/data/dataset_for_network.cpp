// Which data a network trains on: Fashion-MNIST for networks taking 28x28 images, synthetic for
// the others, unless asked otherwise (an IDX folder of any image size: `idx`).
#include <algorithm>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

Dataset load_dataset_for(const std::string& kind, const std::string& directory, const Network& network,
                         const std::string& split) {
  const std::int64_t features = shape_elements(network.input_shape);
  std::string chosen = kind;
  if (chosen == "auto") chosen = features == 28 * 28 ? "fashion-mnist" : "synthetic";
  if (chosen == "fashion-mnist") {
    if (features != 28 * 28) {
      throw Error("data fashion-mnist: " + network.name + " takes " + shape_to_string(network.input_shape) +
                  " inputs, not 28x28 images (use synthetic data)");
    }
    return load_fashion_mnist(directory, split);
  }
  if (chosen == "idx") {
    Dataset data = load_idx_folder(directory, split);
    if (data.samples.rows() != features) {
      throw Error("data idx: " + network.name + " takes " + shape_to_string(network.input_shape) + " inputs, but " +
                  directory + " has images of " + shape_to_string(data.sample_shape));
    }
    data.sample_shape = network.input_shape;  // the same values, in the network's layout
    return data;
  }
  if (chosen != "synthetic") throw Error("data must be fashion-mnist, idx, synthetic or auto, got '" + kind + "'");
  if (split != "train") throw Error("test accuracy needs real data (fashion-mnist or idx)");
  const Layer& last = network.layers.back();
  const auto classes = static_cast<std::int32_t>(last.type == "dense" ? last.dense.out_features : 10);
  return synthetic_dataset(network.input_shape, classes, std::max<std::int64_t>(4 * network.batch, 2048), 1);
}

}  // namespace pipetwin
