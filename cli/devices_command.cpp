// `pipetwin devices`: the CPU cores and CUDA devices this machine offers to the executors.
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/exec/cuda_probe.hpp"
#include "pipetwin/models/error.hpp"
#include "table.hpp"

namespace pipetwin::cli {

void add_devices_command(CLI::App& app) {
  auto* command = app.add_subcommand("devices", "list the CPU cores and CUDA devices available here");
  command->callback([] {
    std::cout << "cpu: " << std::thread::hardware_concurrency() << " hardware threads\n";
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) std::cout << "cuda: none: " << probe.reason << "\n";
    for (const auto& d : probe.devices) {
      std::cout << fmt::format("cuda:{}: {} (sm_{}{}), {} SMs, {}\n", d.index, d.name, d.compute_major,
                               d.compute_minor, d.sm_count, human_bytes(d.memory_bytes));
    }
    try {
      std::cout << "cuda executor: " << cuda::load_cuda_plugin().path << "\n";
    } catch (const Error& e) {
      std::cout << "cuda executor: none: " << e.what() << "\n";
    }
  });
}

}  // namespace pipetwin::cli
