// The small synthetic data set the executor tests train on: 64 samples of `network`'s input shape,
// with as many classes as its last layer has outputs (seed 3).
#pragma once
#include <cstdint>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/network.hpp"

namespace pipetwin::test {

inline Dataset synthetic_data_for(const Network& network) {
  const Layer& last = network.layers.back();
  const auto classes = static_cast<std::int32_t>(shape_elements(last.output_shape) > 1 ? shape_elements(last.output_shape)
                                                                                      : last.dense.out_features);
  return synthetic_dataset(network.input_shape, classes, 64, 3);
}

}  // namespace pipetwin::test
