// Text for the terminal from what a user or a file gave: an error message may quote a name or a
// value as it came, and a control character in it (an escape sequence, a carriage return) would
// act on the terminal instead of showing. Each is shown escaped instead.
#pragma once
#include <cstdio>
#include <string>

#include "pipetwin/models/names.hpp"

namespace pipetwin::cli {

// `text` with every control character written out: "\n", "\r", "\t", or "\x1b" and the like.
inline std::string printable(const std::string& text) {
  std::string shown;
  shown.reserve(text.size());
  for (const char c : text) {
    if (!is_control_character(c)) {
      shown += c;
    } else if (c == '\n') {
      shown += "\\n";
    } else if (c == '\r') {
      shown += "\\r";
    } else if (c == '\t') {
      shown += "\\t";
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      shown += escaped;
    }
  }
  return shown;
}

}  // namespace pipetwin::cli
