// The plug-in's one exported symbol: the CUDA executor's entry points (libpipetwin_cuda.so).
#include "pipetwin/exec/cuda/cuda_plugin.hpp"

extern "C" __attribute__((visibility("default"))) const pipetwin::cuda::PluginEntryPoints*
pipetwin_cuda_plugin_entry_points() {
  static constexpr pipetwin::cuda::PluginEntryPoints entry_points{
      pipetwin::cuda::plugin_abi(), &pipetwin::cuda::run_cuda, &pipetwin::cuda::profile_cuda};
  return &entry_points;
}
