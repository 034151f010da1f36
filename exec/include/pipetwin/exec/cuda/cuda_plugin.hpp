// The CUDA executor as a plug-in: the shared library libpipetwin_cuda.so (built with the CUDA
// executor, beside the programs in build/lib) holds run_cuda and profile_cuda with cuBLAS. The CLI
// loads it only when --device cuda asks for it, so that every other command starts without
// loading cuBLAS (about 200 MB of resident memory and tens of milliseconds).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "pipetwin/exec/cuda/cuda_executor.hpp"

namespace pipetwin::cuda {

// What the plug-in hands the program. `abi` must equal plugin_abi() of the program: a plug-in from
// another build (other sizes of what crosses) is refused rather than called.
struct PluginEntryPoints {
  std::uint64_t abi;
  TrainingRun (*run)(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                     const TrainingOptions& training, const CudaOptions& options, std::string* placement);
  Calibration (*profile)(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                         const CudaOptions& options, const std::function<void(const std::string&)>& progress,
                         int concurrent, ConcurrentTiming timing);
};

// This header's version and the sizes of the types that cross between program and plug-in.
constexpr std::uint64_t plugin_abi() {
  // 3: profile takes a ConcurrentTiming; 4: LayerTimes::assembly_s; 5: TrainingRun::unmarked_tasks,
  // CudaOptions::unmarked_twins; 6: CudaOptions::unmarked_twins auto, all or none
  constexpr std::uint64_t version = 6;
  return version << 56 ^ sizeof(TaskGraph) << 40 ^ sizeof(TrainingRun) << 24 ^ sizeof(Calibration) << 8 ^
         sizeof(GraphConfig) ^ sizeof(CudaOptions) << 4 ^ sizeof(TrainingOptions) << 16;
}

// A loaded plug-in: where it came from and its entry points (valid for the life of the process:
// the library is never unloaded).
struct LoadedPlugin {
  std::string path;
  const PluginEntryPoints* entry_points = nullptr;
};

// Loads the plug-in from $PIPETWIN_CUDA_PLUGIN, else from <program dir>/../lib/libpipetwin_cuda.so,
// else beside the program, else beside the shared object this loader is linked into (Python's
// pipetwin/_core*.so: the package folder). Throws pipetwin::Error saying where it looked and why
// it failed (a build without CUDA has no plug-in). Loading twice returns the same library.
LoadedPlugin load_cuda_plugin();

}  // namespace pipetwin::cuda

// The one symbol the plug-in exports.
extern "C" const pipetwin::cuda::PluginEntryPoints* pipetwin_cuda_plugin_entry_points();
