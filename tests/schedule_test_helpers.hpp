// Helpers shared by the schedule tests: graphs of uniform networks on unit hardware.
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::test {

// An MLP of `layers` equal dense layers (width 16): every layer costs the same on `unit`.
inline GraphConfig uniform_config(const std::string& schedule, int layers, int processors,
                                  int microbatches, int minibatches,
                                  std::vector<std::string> extra = {}) {
  GraphConfig config;
  config.model = "mlp";
  config.schedule = schedule;
  config.hardware = "unit";
  config.processors = processors;
  config.microbatches = microbatches;
  config.minibatches = minibatches;
  std::string widths = "16";
  for (int l = 0; l < layers; ++l) widths += ",16";
  config.params = {"widths=" + widths, "batch=" + std::to_string(microbatches * 2)};
  config.params.insert(config.params.end(), extra.begin(), extra.end());
  return config;
}

}  // namespace pipetwin::test
