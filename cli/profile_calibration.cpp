// The CLI's options to exec's profile_cpu or profile_cuda, with progress on stderr.
#include "profile_calibration.hpp"

#include <iostream>

#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {

Calibration profile_device_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                       bool progress, int concurrent) {
  const ScheduleRequest request = make_request(config);
  const auto data = load_data(executor, request.network, "train");
  std::function<void(const std::string&)> report;
  if (progress) report = [](const std::string& line) { std::cerr << line << "\n"; };
  if (executor.device == "cuda") {
    if (concurrent != 1) throw Error("--concurrent: CUDA profiles time one SM partition or GPU alone");
    return cuda::load_cuda_plugin().entry_points->profile(config, *data, repeats, executor.seed, executor.cuda, report);
  }
  return cpu::profile_cpu(config, *data, repeats, executor.seed, report, concurrent);
}

}  // namespace pipetwin::cli
