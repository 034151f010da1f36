// Temporary folders for tests: each made fresh under the system's temp folder (mkdtemp) and
// removed with everything in it when it goes out of scope, so tests leave nothing behind.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "pipetwin/models/error.hpp"

namespace pipetwin::test {

// A new, empty folder of its own ("pipetwin-<purpose>-XXXXXX"), removed by the destructor.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& purpose = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("pipetwin-" + purpose + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error("cannot make a temporary folder like " + pattern);
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;  // a destructor must not throw; what cannot be removed stays
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// One folder for the whole test process, removed when the process exits normally: for files a
// helper must hand on by name (a schedule's `file=` parameter) after the helper returns.
inline const TemporaryFolder& process_temporary_folder() {
  static const TemporaryFolder folder("tests");
  return folder;
}

}  // namespace pipetwin::test
