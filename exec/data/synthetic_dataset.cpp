// A learnable synthetic dataset: Gaussian samples labelled by the argmax of a random linear map.
#include <random>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

Dataset synthetic_dataset(const std::vector<std::int64_t>& sample_shape, std::int32_t classes,
                          std::int64_t count, std::uint64_t seed) {
  std::int64_t features = 1;
  for (const auto extent : sample_shape) features *= extent;
  if (features < 1 || classes < 2 || count < 1) throw Error("synthetic dataset: empty shape, < 2 classes or no samples");
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Dataset data;
  data.name = "synthetic";
  data.sample_shape = sample_shape;
  data.classes = classes;
  Eigen::MatrixXf teacher(classes, features);
  for (std::int64_t i = 0; i < teacher.size(); ++i) teacher.data()[i] = normal(generator);
  data.samples.resize(features, count);
  for (std::int64_t i = 0; i < data.samples.size(); ++i) data.samples.data()[i] = normal(generator);
  const Eigen::MatrixXf scores = teacher * data.samples;
  data.labels.resize(static_cast<std::size_t>(count));
  for (std::int64_t s = 0; s < count; ++s) {
    Eigen::Index best = 0;
    scores.col(s).maxCoeff(&best);
    data.labels[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(best);
  }
  return data;
}

}  // namespace pipetwin
