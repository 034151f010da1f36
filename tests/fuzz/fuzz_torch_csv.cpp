// libFuzzer entry for pipetwin::fuzz::torch_csv (scripts/fuzz.sh builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pipetwin::fuzz::torch_csv(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
