// What each fuzz target feeds one input to: a loader (network JSON, hardware JSON, graph JSON,
// calibration JSON, torch CSV) and what a user's command does next with what it loaded. The only
// failure a loader may report is pipetwin::Error with a message; anything else (a crash, another
// exception, a sanitizer report) is a bug. Used by the libFuzzer targets (scripts/fuzz.sh) and by
// the corpus replay test in the ordinary test suite.
#pragma once
#include <string>

namespace pipetwin::fuzz {

void network_json(const std::string& text);
void hardware_json(const std::string& text);
void graph_json(const std::string& text);
void calibration_json(const std::string& text);
void torch_csv(const std::string& text);

}  // namespace pipetwin::fuzz
