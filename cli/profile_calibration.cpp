// The CLI's options to exec's profile_cpu, with progress on stderr.
#include "profile_calibration.hpp"

#include <iostream>

#include "pipetwin/exec/cpu/profiler.hpp"

namespace pipetwin::cli {

Calibration profile_cpu_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                    bool progress) {
  const ScheduleRequest request = make_request(config);
  const auto data = load_data(executor, request.network, "train");
  std::function<void(const std::string&)> report;
  if (progress) report = [](const std::string& line) { std::cerr << line << "\n"; };
  return cpu::profile_cpu(config, *data, repeats, executor.seed, report);
}

}  // namespace pipetwin::cli
