// Finds and loads libpipetwin_cuda.so (dlopen): beside the program (the CLI) or beside the module
// that holds this code (Python's extension), checks that it was built with this program, and
// returns its entry points. The library stays loaded (RTLD_NODELETE): errors thrown inside it and
// objects it made may outlive any handle.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

constexpr const char* kPluginFile = "libpipetwin_cuda.so";

// The shared object (or program) this code was linked into: Python's extension module, whose
// package folder holds the plug-in in a wheel built with CUDA. Empty when it cannot be told.
std::filesystem::path this_module_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&this_module_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code error;
  const std::filesystem::path module = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::filesystem::path{} : module.parent_path();
}

std::vector<std::string> candidate_paths() {
  if (const char* explicit_path = std::getenv("PIPETWIN_CUDA_PLUGIN"); explicit_path != nullptr && *explicit_path) {
    return {explicit_path};
  }
  std::vector<std::string> paths;
  const auto add = [&paths](const std::filesystem::path& path) {
    if (std::find(paths.begin(), paths.end(), path.string()) == paths.end()) paths.push_back(path.string());
  };
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path dir = program.parent_path();
    add(dir.parent_path() / "lib" / kPluginFile);
    add(dir / kPluginFile);
  }
  if (const auto module_dir = this_module_dir(); !module_dir.empty()) add(module_dir / kPluginFile);
  if (paths.empty()) paths.push_back(kPluginFile);  // the loader's own search path
  return paths;
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
