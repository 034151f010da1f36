// libFuzzer entry for pipetwin::fuzz::hardware_json (scripts/fuzz.sh builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pipetwin::fuzz::hardware_json(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
