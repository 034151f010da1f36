// Edit distance and "did you mean" suggestions for unknown names.
#include "pipetwin/models/names.hpp"

#include <algorithm>
#include <cctype>

namespace pipetwin {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_name(const std::string& query, const std::vector<std::string>& candidates) {
  std::string lowered = query;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string best;
  int best_distance = 0;
  for (const auto& candidate : candidates) {  // a name that starts the query: "batchsize"
    if (!candidate.empty() && lowered.rfind(candidate, 0) == 0 && candidate.size() > best.size()) {
      best = candidate;
    }
  }
  if (!best.empty()) return best;
  for (const auto& candidate : candidates) {
    const int distance = edit_distance(lowered, candidate);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  // A plausible typo: at most a third of the longer name changed (and at least one edit allowed).
  const auto longest = std::max(query.size(), best.size());
  if (best.empty() || best_distance > std::max<int>(2, static_cast<int>(longest) / 3)) return "";
  return best;
}

std::string unknown_name_message(const std::string& what, const std::string& query,
                                 const std::vector<std::string>& candidates) {
  std::string message = "unknown " + what + " '" + query + "'";
  const std::string suggestion = closest_name(query, candidates);
  if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
  message += " (known: ";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    message += (i ? ", " : "") + candidates[i];
  }
  return message + ")";
}

}  // namespace pipetwin
