// `pipetwin devices`: the CPU cores and CUDA devices this machine offers to the executors.
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "pipetwin/exec/cuda_probe.hpp"
#include "table.hpp"

namespace pipetwin::cli {

void add_devices_command(CLI::App& app) {
  auto* command = app.add_subcommand("devices", "list the CPU cores and CUDA devices available here");
  command->callback([] {
    std::cout << "cpu: " << std::thread::hardware_concurrency() << " hardware threads\n";
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) {
      std::cout << "cuda: none: " << probe.reason << "\n";
      return;
    }
    for (const auto& d : probe.devices) {
      std::cout << fmt::format("cuda:{}: {} (sm_{}{}), {} SMs, {}\n", d.index, d.name, d.compute_major,
                               d.compute_minor, d.sm_count, human_bytes(d.memory_bytes));
    }
  });
}

}  // namespace pipetwin::cli
