// Training data for the executors: Fashion-MNIST from its IDX files (Debian's
// dataset-fashion-mnist, gzipped or not), or a small synthetic set for tests; and the sampler
// that deals each (minibatch, microbatch) of a schedule its samples, reshuffled every epoch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "pipetwin/models/network.hpp"

namespace pipetwin {

struct Dataset {
  std::string name;
  std::vector<std::int64_t> sample_shape;  // e.g. {1, 28, 28}
  Eigen::MatrixXf samples;                 // [features x count], one column per sample
  std::vector<std::int32_t> labels;        // [count]
  std::int32_t classes = 0;
  std::int64_t size() const { return samples.cols(); }
};

// Where Debian's dataset-fashion-mnist puts the files.
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// An IDX image file (magic 0x803) and its label file (0x801); pixels scaled to [0, 1] and
// standardized with `mean` and `std`. Throws naming the file on a missing or malformed file.
Dataset read_idx_dataset(const std::string& images_path, const std::string& labels_path, double mean, double std);
// `split` is "train" (60000 samples) or "test" (10000); files `<split>-images-idx3-ubyte[.gz]`.
Dataset load_fashion_mnist(const std::string& directory, const std::string& split);
// Any IDX image set in `directory` laid out as Fashion-MNIST's (`train-` and `t10k-images-idx3-ubyte`
// and their labels, gzipped or not), of any image size, standardized with the training images'
// own mean and std (for example experiments/export_digits.py's digits).
Dataset load_idx_folder(const std::string& directory, const std::string& split);

// Samples drawn from N(0, 1), labelled by a fixed random linear teacher, so that a network can
// learn them; the same seed gives the same set.
Dataset synthetic_dataset(const std::vector<std::int64_t>& sample_shape, std::int32_t classes,
                          std::int64_t count, std::uint64_t seed);

// The data `network` trains on: `kind` is fashion-mnist (read from `directory`), idx (any IDX set
// in `directory`, load_idx_folder), synthetic, or auto (Fashion-MNIST for networks taking 28x28
// images, synthetic otherwise); `split` is train or test (test needs real data).
Dataset load_dataset_for(const std::string& kind, const std::string& directory, const Network& network,
                         const std::string& split);

// Minibatch k takes samples [k * batch, (k + 1) * batch) of an epoch's permutation (epoch =
// those samples / dataset size, each epoch shuffled with its own seed); microbatch m takes its
// consecutive slice. Safe to call from several threads.
class BatchSampler {
 public:
  BatchSampler(const Dataset& data, std::int64_t batch, std::int32_t microbatches, std::int32_t minibatches,
               std::uint64_t seed, bool shuffle = true);
  std::int64_t samples_per_microbatch() const { return batch_ / microbatches_; }
  std::int32_t microbatches() const { return microbatches_; }
  // The microbatch's samples [features x n] and labels [n], each where its pointer is not null (the
  // last stage of a pipeline needs only the labels).
  void fill(std::int32_t minibatch, std::int32_t microbatch, Eigen::MatrixXf* samples,
            std::vector<std::int32_t>* labels) const;
  const Dataset& data() const { return data_; }

 private:
  const Dataset& data_;
  std::int64_t batch_;
  std::int32_t microbatches_;
  std::vector<std::vector<std::int32_t>> epoch_order_;  // per epoch, a permutation of the samples
};

}  // namespace pipetwin
