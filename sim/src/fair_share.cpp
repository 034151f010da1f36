// Processor-sharing arithmetic for link media and memory systems.
#include "fair_share.hpp"

#include <algorithm>
#include <cmath>

namespace pipetwin::sim {
namespace {
constexpr double kDone = 1e-6;  // remaining service below this is finished
}

void FairShare::advance(std::int64_t now) {
  if (!active_.empty() && now > last_update_) {
    const double share = static_cast<double>(now - last_update_) / static_cast<double>(active_.size());
    for (auto& job : active_) job.remaining_cycles -= share;
  }
  last_update_ = now;
}

void FairShare::take_finished(std::vector<std::int32_t>& finished) {
  finished.clear();
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->remaining_cycles <= kDone) {
      finished.push_back(it->id);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

std::int64_t FairShare::next_completion(std::int64_t now) const {
  if (active_.empty()) return -1;
  double least = active_.front().remaining_cycles;
  for (const auto& job : active_) least = std::min(least, job.remaining_cycles);
  const auto wait = static_cast<std::int64_t>(std::ceil(least * static_cast<double>(active_.size()) - kDone));
  return now + std::max<std::int64_t>(wait, 1);
}

}  // namespace pipetwin::sim
