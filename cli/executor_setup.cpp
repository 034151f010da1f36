// Device check, training options and data for the executor commands.
#include "executor_setup.hpp"

#include "pipetwin/exec/cuda_probe.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {

void add_executor_options(CLI::App& command, ExecutorOptions& options, bool with_training) {
  command.add_option("--device", options.device, "executor: cpu (threads as processors, Eigen) or cuda")
      ->capture_default_str();
  command.add_option("--data", options.data,
                     "training data: fashion-mnist, synthetic, or auto (Fashion-MNIST for networks "
                     "taking 28x28 images, synthetic otherwise)")
      ->capture_default_str();
  command.add_option("--data-dir", options.data_dir, "folder with the Fashion-MNIST IDX files (.gz or not)")
      ->capture_default_str();
  if (!with_training) return;
  command.add_option("--lr", options.learning_rate, "SGD learning rate")->capture_default_str();
  command.add_option("--momentum", options.momentum, "SGD momentum (0: plain SGD)")->capture_default_str();
  command.add_option("--seed", options.seed, "seed of the initial weights")->capture_default_str();
}

void check_device(const std::string& device) {
  if (device == "cpu") return;
  if (device != "cuda") throw Error("--device must be cpu or cuda, got '" + device + "'");
  const CudaProbe probe = probe_cuda();
  if (!probe.built_with_cuda) throw Error("--device cuda: this pipetwin was built without CUDA");
  if (probe.devices.empty()) throw Error("--device cuda: no CUDA device: " + probe.reason);
  throw Error("--device cuda: the CUDA executor is not part of this build yet; use --device cpu");
}

std::unique_ptr<Dataset> load_data(const ExecutorOptions& options, const Network& network, const std::string& split) {
  try {
    return std::make_unique<Dataset>(load_dataset_for(options.data, options.data_dir, network, split));
  } catch (const Error& e) {
    const std::string text = e.what();
    throw Error(text.rfind("data", 0) == 0 ? "--" + text : text);  // name the option
  }
}

cpu::TrainingOptions training_options(const ExecutorOptions& options) {
  if (!(options.learning_rate > 0)) throw Error("--lr must be positive");
  if (options.momentum < 0 || options.momentum >= 1) throw Error("--momentum must be in [0, 1)");
  cpu::TrainingOptions training;
  training.learning_rate = options.learning_rate;
  training.momentum = options.momentum;
  training.seed = options.seed;
  return training;
}

}  // namespace pipetwin::cli
