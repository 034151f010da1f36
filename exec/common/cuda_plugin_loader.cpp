// Finds and loads libpipetwin_cuda.so (dlopen), checks that it was built with this program, and
// returns its entry points. The library stays loaded (RTLD_NODELETE): errors thrown inside it and
// objects it made may outlive any handle.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

constexpr const char* kPluginFile = "libpipetwin_cuda.so";

std::vector<std::string> candidate_paths() {
  if (const char* explicit_path = std::getenv("PIPETWIN_CUDA_PLUGIN"); explicit_path != nullptr && *explicit_path) {
    return {explicit_path};
  }
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {kPluginFile};  // the loader's own search path
  const std::filesystem::path dir = program.parent_path();
  return {(dir.parent_path() / "lib" / kPluginFile).string(), (dir / kPluginFile).string()};
}

}  // namespace

LoadedPlugin load_cuda_plugin() {
  std::string tried;
  for (const auto& path : candidate_paths()) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (library == nullptr) {
      const char* why = dlerror();
      throw Error("the CUDA executor (" + path + ") cannot be loaded: " + (why ? why : "unknown reason"));
    }
    using EntryFunction = const PluginEntryPoints* (*)();
    auto entry = reinterpret_cast<EntryFunction>(dlsym(library, "pipetwin_cuda_plugin_entry_points"));
    if (entry == nullptr) throw Error(path + " is not pipetwin's CUDA executor (no entry point)");
    const PluginEntryPoints* points = entry();
    if (points == nullptr || points->abi != plugin_abi()) {
      throw Error(path + " was built with another version of pipetwin; rebuild (scripts/build.sh)");
    }
    return LoadedPlugin{path, points};
  }
  throw Error("this pipetwin has no CUDA executor: " + std::string(kPluginFile) + " is not at " + tried +
              " (it is built when nvcc is found at configure time; PIPETWIN_CUDA_PLUGIN may name it)");
}

}  // namespace pipetwin::cuda
