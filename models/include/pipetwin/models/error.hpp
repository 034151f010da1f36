// The one exception type of pipetwin: library code throws it with a message that says what is
// wrong and where; the CLI and Python turn it into a one-line error.
#pragma once
#include <stdexcept>
#include <string>

namespace pipetwin {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace pipetwin
