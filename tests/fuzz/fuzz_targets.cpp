// The fuzz targets' bodies (see fuzz_targets.hpp).
#include "fuzz_targets.hpp"

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/models/params.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin::fuzz {

void network_json(const std::string& text) {
  try {
    const Network net = network_from_json_text(text, "fuzz.json", Params{});
    (void)net.size();
  } catch (const Error&) {
  }
}

void hardware_json(const std::string& text) {
  try {
    const HardwareProfile hw = hardware_from_json_text(text, "fuzz.json", Params{});
    (void)hw.clock_hz();
  } catch (const Error&) {
  }
}

void graph_json(const std::string& text) {
  try {
    const TaskGraph g = graph_from_json(text, "fuzz.json");
    // What `pipetwin evaluate --graph` does: validate, then evaluate a valid graph. A round trip
    // must give the same text back.
    if (validate(g).empty()) {
      (void)evaluate(g);
      if (graph_to_json(graph_from_json(graph_to_json(g), "again.json")) != graph_to_json(g)) {
        __builtin_trap();
      }
    }
  } catch (const Error&) {
  }
}

void calibration_json(const std::string& text) {
  try {
    const Calibration c = calibration_from_json_text(text, "fuzz.json");
    (void)calibration_from_json_text(calibration_to_json_text(c), "again.json");
  } catch (const Error&) {
  }
}

void torch_csv(const std::string& text) {
  try {
    (void)parse_torch_csv(text, "fuzz.csv");
  } catch (const Error&) {
  }
}

}  // namespace pipetwin::fuzz
