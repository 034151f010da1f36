// Name lookup helpers: edit distance and "did you mean" messages for unknown names.
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

}  // namespace pipetwin
