// What `run`, `profile` and `validate` share: the --device check and the executor it names (with
// the CUDA placement options), the training options, and the data a network trains on
// (Fashion-MNIST where the network takes 28x28 images, else synthetic).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cuda/cuda_executor.hpp"
#include "pipetwin/exec/dataset.hpp"

namespace pipetwin::cli {

struct ExecutorOptions {
  std::string device = "cpu";
  cuda::CudaOptions cuda;  // --placement, --gpu, --partition-sms, --tf32
  std::string data = "auto";
  std::string data_dir = kFashionMnistDir;
  double learning_rate = 0.05;
  double momentum = 0;
  std::uint64_t seed = 1;
  std::string handoff_spin = "auto";  // --handoff-spin-us: microseconds, or auto (TrainingOptions::handoff_spin_s)
  std::string transfer_threads = "auto";  // TrainingOptions::transfer_threads: auto, links or senders
  bool pin_threads = false;    // TrainingOptions::pin_cpus: this process's CPUs, in turn
  std::string unmarked_twins = "auto";  // profiling: which tables' overheads from unmarked twin runs (takes_unmarked_twins)
};

// --handoff-spin-us in seconds (TrainingOptions::handoff_spin_s): kAutomaticHandoffSpin for auto.
double handoff_spin_s(const ExecutorOptions& options);

// The CPUs `--pin-threads` pins to (this process's affinity mask), or none without it.
std::vector<int> pinned_cpus(const ExecutorOptions& options);

// A CLI11 check for an option that takes "auto" or a number `in_range` accepts; otherwise
// "<wanted>, or auto; got '<text>'".
CLI::Validator number_or_auto(const std::function<bool(double)>& in_range, const std::string& wanted);

void add_executor_options(CLI::App& command, ExecutorOptions& options, bool with_training);
// --concurrent-timing pipeline|copies: how a CPU table for 2 or more processors times its layers
// (cpu::ConcurrentTiming), for profile and validate.
void add_concurrent_timing_option(CLI::App& command, std::string& timing);
// --unmarked-twins (ExecutorOptions::unmarked_twins), for profile and validate.
void add_unmarked_twins_option(CLI::App& command, ExecutorOptions& options);

// Throws unless the device can run here: "cpu", or "cuda" with a clear word on why not.
void check_device(const std::string& device);

// The executor the options name; `placement` (when not null) gets what ran where: the placement of
// the run with the most processors so far (one runner's calls, one at a time).
Runner executor_runner(const ExecutorOptions& options, std::string* placement);

// "cpu-core" for the CPU; for CUDA the hardware profile of the GPU whose memory capacity the
// schedule's declared memory is checked against (h100 unless --hardware says otherwise).
void default_hardware_for_device(const ExecutorOptions& options, std::string& hardware);

// The training split (or "test") for `network`: fashion-mnist, synthetic, or auto.
std::unique_ptr<Dataset> load_data(const ExecutorOptions& options, const Network& network, const std::string& split);

TrainingOptions training_options(const ExecutorOptions& options);

}  // namespace pipetwin::cli
