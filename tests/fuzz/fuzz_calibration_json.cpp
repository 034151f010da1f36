// libFuzzer entry for pipetwin::fuzz::calibration_json (scripts/fuzz.sh builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pipetwin::fuzz::calibration_json(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
