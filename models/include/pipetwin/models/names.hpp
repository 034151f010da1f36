// Name helpers: edit distance and "did you mean" messages for unknown names, and which characters
// a name printed to a terminal must not hold.
#pragma once
#include <string>
#include <vector>

namespace pipetwin {

// Levenshtein distance between two strings (case-sensitive).
int edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `query`, or "" when none is close enough to be a plausible typo.
std::string closest_name(const std::string& query, const std::vector<std::string>& candidates);

// "unknown <what> 'x'; did you mean 'y'? (known: a, b, c)".
std::string unknown_name_message(const std::string& what, const std::string& query,
                                 const std::vector<std::string>& candidates);

// A control character (an escape sequence's start, a carriage return, a newline, DEL): one would act
// on a terminal instead of showing, so names from files refuse them and error lines escape them.
constexpr bool is_control_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

}  // namespace pipetwin
