// Every input kept for the fuzz targets (tests/fuzz/corpus/<target>/: the seeds, and any input a
// fuzzer once crashed on) goes through its target again in the ordinary test suite: loaders
// report bad input as pipetwin::Error and nothing else.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "fuzz/fuzz_targets.hpp"

TEST_CASE("fuzz corpus replay: every kept input through its loader, with no crash") {
  namespace fs = std::filesystem;
  const std::map<std::string, std::function<void(const std::string&)>> targets = {
      {"network_json", pipetwin::fuzz::network_json}, {"hardware_json", pipetwin::fuzz::hardware_json},
      {"graph_json", pipetwin::fuzz::graph_json},     {"calibration_json", pipetwin::fuzz::calibration_json},
      {"torch_csv", pipetwin::fuzz::torch_csv}};
  for (const auto& each_name_target : targets) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& name = each_name_target.first;
    const auto& target = each_name_target.second;
    const fs::path folder = fs::path(PIPETWIN_FUZZ_CORPUS_DIR) / name;
    REQUIRE(fs::is_directory(folder));
    int inputs = 0;
    for (const auto& entry : fs::directory_iterator(folder)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      CAPTURE(entry.path().string());
      target(text.str());
      ++inputs;
    }
    CAPTURE(name);
    CHECK(inputs > 0);
  }
}
