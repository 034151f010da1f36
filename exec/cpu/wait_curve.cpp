// The wait curve: work over a footprint timed after waits of growing length (wait_curve.hpp).
#include "pipetwin/exec/cpu/wait_curve.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "../common/spin_wait.hpp"
#include "vector_clones.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Multiply-adds of weights w [rows][256] (a KiB a row) into y [256], `passes` times over w: a
// dense layer's inner loop, one clone per vector ISA picked at load time (this file is built with
// -O3), so that it reads the footprint as a vectorized kernel does (pipetwin_idle_benchmark's
// work, with which the curve's figures in docs/executor.md were first measured).
PIPETWIN_VECTOR_CLONES
float multiply_adds(float* y, const float* w, std::size_t rows, int passes) {
  for (int p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < rows; ++i) {
      const float x = 0.001f * static_cast<float>(i % 16 + 1);
      const float* row = w + i * 256;
      for (std::size_t j = 0; j < 256; ++j) y[j] = y[j] * 0.999f + x * row[j];
    }
  }
  return y[0];
}

}  // namespace

std::vector<std::pair<double, double>> measure_wait_curve(std::int64_t footprint_bytes, int repeats, double spin_s,
                                                          double work_s) {
  if (footprint_bytes < (64 << 10) || footprint_bytes > (std::int64_t{1} << 30)) {
    throw Error("wait curve: a footprint of 64 KiB to 1 GiB, got " + std::to_string(footprint_bytes) + " bytes");
  }
  if (repeats < 1) throw Error("wait curve: repeats must be at least 1");
  if (!(work_s > 0 && work_s <= 1)) throw Error("wait curve: the work must take more than 0 and at most 1 s");
  const auto rows = static_cast<std::size_t>(footprint_bytes / 1024);
  std::vector<float> y(256, 1.0f), w(rows * 256, 0.5f);  // y [256], w [rows][256]
  float sink = 0;
  // Passes for about work_s, sized after the first (warm) passes.
  sink += multiply_adds(y.data(), w.data(), rows, 1);
  const auto start = Clock::now();
  sink += multiply_adds(y.data(), w.data(), rows, 1);
  const double pass_s = std::max(1e-9, seconds_since(start));
  const int passes = std::max(1, static_cast<int>(work_s / pass_s));
  const std::vector<double>& waits_s = wait_curve_waits_s();
  std::vector<double> back_to_back_s;                  // [repeats]
  std::vector<std::vector<double>> after_s(waits_s.size());  // [wait][repeats]
  const auto timed = [&] {
    const auto begin = Clock::now();
    sink += multiply_adds(y.data(), w.data(), rows, passes);
    return seconds_since(begin);
  };
  for (int r = 0; r < repeats; ++r) {
    back_to_back_s.push_back(timed());
    for (std::size_t k = 0; k < waits_s.size(); ++k) {
      const double spun_s = std::min(waits_s[k], std::max(0.0, spin_s));
      if (spun_s > 0) exec::spin_until([] { return false; }, spun_s);
      if (waits_s[k] > spun_s) std::this_thread::sleep_for(std::chrono::duration<double>(waits_s[k] - spun_s));
      after_s[k].push_back(timed());
    }
  }
  volatile float observed = sink;  // the work is observed: not optimised away
  static_cast<void>(observed);
  const double base_s = median_of(back_to_back_s);
  std::vector<std::pair<double, double>> curve;
  double highest = 0;
  for (std::size_t k = 0; k < waits_s.size(); ++k) {
    highest = std::max(highest, (median_of(after_s[k]) - base_s) / static_cast<double>(rows * 1024));
    curve.emplace_back(waits_s[k], highest);
  }
  return curve;
}

}  // namespace pipetwin::cpu
