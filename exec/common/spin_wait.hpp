// Busy-waiting with the CPU's pause hint: what a thread of the executor does for its next task's
// inputs before it sleeps (TrainingOptions::handoff_spin_s), and what the profile's handoff
// measurement does likewise.
#pragma once
#include <chrono>
#include <cstdint>

namespace pipetwin::exec {

// Spins until `done()` or `seconds` have passed (the clock read every 64 tries); whether done.
template <typename Done>
bool spin_until(Done done, double seconds) {
  if (seconds <= 0) return done();
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (std::uint32_t i = 1; !done(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && Clock::now() >= until) return false;
  }
  return true;
}

}  // namespace pipetwin::exec
