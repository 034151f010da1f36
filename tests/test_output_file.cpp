// Output files: written whole, through symbolic links, and never replacing a device or a FIFO
// (a run as root once replaced /dev/null with a regular file). Everything happens in a temporary
// folder of the test's own.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "temporary_folder.hpp"

namespace fs = std::filesystem;
using namespace pipetwin;
using pipetwin::test::TemporaryFolder;

namespace {

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t entries(const fs::path& folder) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("output files: new, replaced whole, through symbolic links, never over a FIFO or a directory") {
  const TemporaryFolder folder("output");
  const fs::path file = folder.path() / "out.json";
  write_output_file(file.string(), "one");
  CHECK(read(file) == "one");
  write_output_file(file.string(), "two");
  CHECK(read(file) == "two");
  CHECK(entries(folder.path()) == 1);  // no temporary left behind

  // A symbolic link is written through: the target changes, the link stays a link.
  const fs::path link = folder.path() / "link.json";
  fs::create_symlink(file, link);
  write_output_file(link.string(), "three");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read(file) == "three");

  // A directory is an error, and nothing is left beside it.
  const fs::path sub = folder.path() / "sub";
  fs::create_directory(sub);
  CHECK_THROWS_WITH_AS(write_output_file(sub.string(), "x"), doctest::Contains("is a directory"), Error);
  CHECK_THROWS_WITH_AS(write_output_file((folder.path() / "missing" / "x.json").string(), "x"),
                       doctest::Contains("does not exist"), Error);
  CHECK(entries(folder.path()) == 3);  // out.json, link.json, sub

  // A FIFO (like a device) is written in place and stays a FIFO.
  const fs::path fifo = folder.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] { received = read(fifo); });
  write_output_file(fifo.string(), "through the pipe");
  reader.join();
  CHECK(received == "through the pipe");
  CHECK(fs::is_fifo(fs::status(fifo)));
  CHECK(entries(folder.path()) == 4);
}

TEST_CASE("output files: checked before the work, the same errors as the write, nothing written") {
  const TemporaryFolder folder("output-check");
  auto message = [](const std::string& path) {
    try {
      check_output_file(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = (folder.path() / "none" / "out.csv").string();
  CHECK(message(missing) == missing + ": folder " + (folder.path() / "none").string() + " does not exist");
  CHECK(message(folder.path().string()) == folder.path().string() + ": is a directory, not a file");
  CHECK(message("") == "an output path is empty");
  CHECK(message("-") == "no error");
  CHECK(message((folder.path() / "new.csv").string()) == "no error");
  const fs::path loop = folder.path() / "loop";
  fs::create_symlink(loop, loop);  // a link to itself: cannot be followed
  CHECK(message(loop.string()).find("cannot follow the symbolic link") != std::string::npos);
  CHECK(entries(folder.path()) == 1);  // the link alone: checking wrote nothing
  // The write gives what the check gave.
  CHECK_THROWS_WITH_AS(write_output_file(missing, "x"), (missing + ": folder " + (folder.path() / "none").string() +
                                                        " does not exist").c_str(), Error);
}
