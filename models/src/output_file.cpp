// Output files that are written whole and never replace what is not a regular file (see
// output_file.hpp).
#include "pipetwin/models/output_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

namespace fs = std::filesystem;

void write_in_place(const std::string& path, const std::string& shown, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(shown + ": cannot write");
  out << text;
  if (!out.flush()) throw Error(shown + ": write failed");
}

// Where `path`'s text goes: standard output ("-"), in place (what exists and is neither a regular
// file nor a folder), or over a regular file, new or not, at its real path (through links).
struct Destination {
  enum Kind { kStandardOutput, kInPlace, kReplaced } kind;
  fs::path target;
};

Destination destination(const std::string& path) {
  if (path == "-") return {Destination::kStandardOutput, {}};
  if (path.empty()) throw Error("an output path is empty");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);  // follows symbolic links
  if (fs::is_directory(status)) throw Error(path + ": is a directory, not a file");
  if (fs::exists(status) && !fs::is_regular_file(status)) {  // a device, a FIFO, a socket: never replaced
    return {Destination::kInPlace, path};
  }
  // A regular file or a new one: the real target (through symbolic links), replaced whole.
  fs::path target = path;
  if (fs::is_symlink(fs::symlink_status(path, error))) {
    target = fs::weakly_canonical(path, error);
    if (error) throw Error(path + ": cannot follow the symbolic link (" + error.message() + ")");
  }
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, error)) throw Error(path + ": folder " + folder.string() + " does not exist");
  return {Destination::kReplaced, target};
}

}  // namespace

void check_output_file(const std::string& path) { destination(path); }

void write_output_file(const std::string& path, const std::string& text) {
  const Destination where = destination(path);
  if (where.kind == Destination::kStandardOutput) {
    std::cout << text;
    return;
  }
  if (where.kind == Destination::kInPlace) {
    write_in_place(path, path, text);
    return;
  }
  const fs::path& target = where.target;
  const std::string temporary = target.string() + ".partial-" + std::to_string(::getpid());
  try {
    write_in_place(temporary, path, text);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw Error(path + ": cannot write");
  }
}

}  // namespace pipetwin
