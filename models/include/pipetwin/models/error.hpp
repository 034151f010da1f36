// The one exception type of pipetwin: library code throws it with a message that says what is
// wrong and where; the CLI and Python turn it into a one-line error.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace pipetwin {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A number for a message, in three significant digits ("6.4e+19").
inline std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

}  // namespace pipetwin
