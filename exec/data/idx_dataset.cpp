// The IDX format (LeCun's MNIST files): a big-endian magic (0x0000 type dims), the dimension
// sizes, then the data. Read through zlib so .gz files need no unpacking.
#include <zlib.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <utility>
#include <memory>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path) {
    if (!std::filesystem::exists(path)) throw Error("dataset file not found: " + path);
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) throw Error("cannot open dataset file " + path);
  }
  std::uint32_t read_u32() {
    std::array<unsigned char, 4> b{};
    read(b.data(), 4);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  }
  void read(unsigned char* out, std::size_t bytes) {
    std::size_t done = 0;
    while (done < bytes) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
      const int got = gzread(file_.get(), out + done, chunk);
      if (got <= 0) throw Error("dataset file " + path_ + " is truncated or corrupt");
      done += static_cast<std::size_t>(got);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
};

}  // namespace

Dataset read_idx_dataset(const std::string& images_path, const std::string& labels_path, double mean, double std) {
  IdxFile images(images_path), labels(labels_path);
  if (images.read_u32() != 0x803) throw Error(images_path + " is not an IDX image file (magic 0x803)");
  if (labels.read_u32() != 0x801) throw Error(labels_path + " is not an IDX label file (magic 0x801)");
  const std::int64_t count = images.read_u32(), rows = images.read_u32(), cols = images.read_u32();
  const std::int64_t label_count = labels.read_u32();
  if (count != label_count) {
    throw Error(images_path + " has " + std::to_string(count) + " images but " + labels_path + " has " +
                std::to_string(label_count) + " labels");
  }
  if (rows <= 0 || cols <= 0 || rows > 4096 || cols > 4096) throw Error(images_path + ": implausible image size");
  Dataset data;
  data.name = std::filesystem::path(images_path).filename().string();
  data.sample_shape = {1, rows, cols};
  std::vector<unsigned char> pixels(static_cast<std::size_t>(count * rows * cols));
  images.read(pixels.data(), pixels.size());
  std::vector<unsigned char> raw_labels(static_cast<std::size_t>(count));
  labels.read(raw_labels.data(), raw_labels.size());
  data.samples.resize(rows * cols, count);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    data.samples.data()[i] = static_cast<float>((pixels[i] / 255.0 - mean) / std);
  }
  data.labels.assign(raw_labels.begin(), raw_labels.end());
  for (const auto label : data.labels) data.classes = std::max(data.classes, label + 1);
  return data;
}

namespace {

// The image and label files of `split` (train or test) in `directory`, as Fashion-MNIST names them.
std::pair<std::string, std::string> idx_split_files(const std::string& directory, const std::string& split,
                                                    const std::string& what) {
  if (split != "train" && split != "test") throw Error(what + " split must be train or test, got '" + split + "'");
  const std::string prefix = directory + "/" + (split == "train" ? "train" : "t10k");
  auto pick = [](const std::string& base) {
    return std::filesystem::exists(base) || !std::filesystem::exists(base + ".gz") ? base : base + ".gz";
  };
  return {pick(prefix + "-images-idx3-ubyte"), pick(prefix + "-labels-idx1-ubyte")};
}

}  // namespace

Dataset load_fashion_mnist(const std::string& directory, const std::string& split) {
  const auto [images, labels] = idx_split_files(directory, split, "fashion-mnist");
  if (!std::filesystem::exists(images)) {
    throw Error("Fashion-MNIST not found: no " + images + "[.gz] (install Debian's dataset-fashion-mnist, or "
                "point --data-dir at a folder with the IDX files)");
  }
  Dataset data = read_idx_dataset(images, labels, 0.2860, 0.3530);  // the training set's mean and std
  data.name = "fashion-mnist/" + split;
  return data;
}

Dataset load_idx_folder(const std::string& directory, const std::string& split) {
  const auto [train_images, train_labels] = idx_split_files(directory, "train", "idx");
  const auto [images, labels] = idx_split_files(directory, split, "idx");
  for (const auto& path : {train_images, images}) {
    if (!std::filesystem::exists(path)) throw Error("idx data: no " + path + "[.gz] (--data-dir names the folder)");
  }
  // The training images' mean and std of pixel / 255, for both splits.
  const Dataset train = read_idx_dataset(train_images, train_labels, 0.0, 1.0);
  const double n = static_cast<double>(train.samples.size());
  const double mean = static_cast<double>(train.samples.sum()) / n;
  const double var = static_cast<double>((train.samples.array() - static_cast<float>(mean)).square().sum()) / n;
  const double std = var > 0 ? std::sqrt(var) : 1.0;
  Dataset data = read_idx_dataset(images, labels, mean, std);
  data.name = std::filesystem::path(directory).filename().string() + "/" + split;
  return data;
}

}  // namespace pipetwin
