// What a wait costs the work after it, per byte that work touches (Calibration::
// wait_curve): the curve both engines charge a processor's task after a wait with
// (schedule/wait_loss.hpp).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace pipetwin::cpu {

// The waits the curve is measured at, in seconds: as long as a pipeline's bubbles on the CPU
// (resnet8's second processor at P = 2 waits 10-70 ms in sequential's and gpipe's flushes).
inline const std::vector<double>& wait_curve_waits_s() {
  static const std::vector<double> waits_s{0.001, 0.005, 0.02, 0.05};
  return waits_s;
}

// The wait curve, on the calling thread: vector multiply-adds over `footprint_bytes` of weights
// (about `work_s` of them, at least one pass), timed right after the thread waited each of
// wait_curve_waits_s() (spinning with the CPU's pause hint for up to `spin_s`, as the executor's
// threads wait for a task's inputs, asleep for the rest), against the same work right after the
// last (no wait), the waits taken in turn `repeats` times. Per wait: the median extra time over
// the median with no wait, per byte of the footprint, at least 0 and made non-decreasing in the
// wait (a longer wait never leaves more in the caches). Throws for a footprint below 64 KiB or
// above 1 GiB, a work time outside (0, 1] s or repeats below 1.
std::vector<std::pair<double, double>> measure_wait_curve(std::int64_t footprint_bytes, int repeats, double spin_s,
                                                          double work_s = 0.002);

}  // namespace pipetwin::cpu
