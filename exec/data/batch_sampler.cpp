// Deals samples to (minibatch, microbatch) pairs, one shuffled permutation per epoch.
#include <algorithm>
#include <numeric>
#include <random>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

BatchSampler::BatchSampler(const Dataset& data, std::int64_t batch, std::int32_t microbatches,
                           std::int32_t minibatches, std::uint64_t seed, bool shuffle)
    : data_(data), batch_(batch), microbatches_(microbatches) {
  if (batch < 1 || microbatches < 1 || batch % microbatches != 0) {
    throw Error("batch " + std::to_string(batch) + " does not split into " + std::to_string(microbatches) + " microbatches");
  }
  if (data.size() < batch) {
    throw Error("dataset " + data.name + " has " + std::to_string(data.size()) + " samples, fewer than one batch of " +
                std::to_string(batch));
  }
  const std::int64_t needed = batch * std::max(1, minibatches);
  const std::int64_t epochs = (needed + data.size() - 1) / data.size();
  for (std::int64_t e = 0; e < epochs; ++e) {
    std::vector<std::int32_t> order(static_cast<std::size_t>(data.size()));
    std::iota(order.begin(), order.end(), 0);
    if (shuffle) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed + static_cast<std::uint64_t>(e)));
    epoch_order_.push_back(std::move(order));
  }
}

void BatchSampler::fill(std::int32_t minibatch, std::int32_t microbatch, Eigen::MatrixXf* samples,
                        std::vector<std::int32_t>* labels) const {
  const std::int64_t n = samples_per_microbatch();
  if (samples != nullptr) samples->resize(data_.samples.rows(), n);
  if (labels != nullptr) labels->resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t position = static_cast<std::int64_t>(minibatch) * batch_ + microbatch * n + i;
    const auto epoch = static_cast<std::size_t>(position / data_.size());
    if (epoch >= epoch_order_.size()) throw Error("internal: sampler asked for minibatch " + std::to_string(minibatch) + " beyond its range");
    const std::int32_t sample = epoch_order_[epoch][static_cast<std::size_t>(position % data_.size())];
    if (samples != nullptr) samples->col(i) = data_.samples.col(sample);
    if (labels != nullptr) (*labels)[static_cast<std::size_t>(i)] = data_.labels[static_cast<std::size_t>(sample)];
  }
}

}  // namespace pipetwin
