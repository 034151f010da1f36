// Benchmark: how much longer a fixed piece of work takes right after its thread slept, against the
// same work back to back. A CPU executor's processor thread sleeps whenever its next task waits on
// another processor, so where the machine (a power-managed core, a virtual CPU the hypervisor
// deschedules) runs a woken thread slower for a while, tasks after a bubble take longer than the
// calibration, which times layers back to back, says (docs/executor.md, "Validation").
//
//   pipetwin_idle_benchmark [--work-us 200] [--repeats 200] [--spin] [--footprint-kib 16]
//
// Prints, per sleep length (50 us to 50 ms), the median extra time of the work (and its
// quartiles); asserts nothing. --spin: the thread waits as the executor's threads do within their
// handoff spin (exec::spin_until, the CPU's pause hint) instead of sleeping. The work is vector
// multiply-adds over --footprint-kib of weights (16 KiB by default: no cache effects, so it
// measures the core's speed after the wait); a footprint the size of a core's L2 cache measures
// as well whether the wait cost the core what its caches held (a virtual CPU whose physical core
// ran something else meanwhile).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "spin_wait.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A fixed amount of multiply-adds over weights w [rows][256] (a KiB a row) into y [256], the
// shape of a dense layer's inner loop; `rounds` sets its length. Compiled for AVX2 and FMA where
// the CPU has them (as oneDNN's kernels run), since a core's clock after a sleep can depend on
// how wide its vector instructions are: inlined into work_avx2, the loop is compiled for its target.
__attribute__((always_inline)) inline double multiply_adds(std::vector<float>& y, const std::vector<float>& w,
                                                           int rounds) {
  const std::size_t rows = w.size() / 256;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < rows; ++i) {
      const float x = 0.001f * static_cast<float>(i % 16 + 1);
      const float* row = &w[i * 256];
      for (std::size_t j = 0; j < 256; ++j) y[j] = y[j] * 0.999f + x * row[j];
    }
  }
  return static_cast<double>(y[0]);
}

__attribute__((target("avx2,fma"))) double work_avx2(std::vector<float>& y, const std::vector<float>& w, int rounds) {
  return multiply_adds(y, w, rounds);
}

double work(std::vector<float>& y, const std::vector<float>& w, int rounds) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2 ? work_avx2(y, w, rounds) : multiply_adds(y, w, rounds);
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

// A whole number from 1 to 1000000, or 0 after saying what was wrong.
int parse_positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 1000000) {
    std::fprintf(stderr, "pipetwin_idle_benchmark: %s needs a whole number from 1 to 1000000, got '%s'\n", flag, text);
    return 0;
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  int work_us = 200, repeats = 200, footprint_kib = 16;
  bool spin = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--spin") {
      spin = true;
    } else if ((arg == "--work-us" || arg == "--repeats" || arg == "--footprint-kib") && i + 1 < argc) {
      int& value = arg == "--work-us" ? work_us : arg == "--repeats" ? repeats : footprint_kib;
      value = parse_positive(argv[i], argv[i + 1]);
      if (value == 0) return 2;
      ++i;
    } else {
      std::fprintf(stderr, "usage: pipetwin_idle_benchmark [--work-us N] [--repeats N] [--spin] [--footprint-kib K]\n"
                           "  the extra time of N us of work right after its thread slept (--spin: spun, as the\n"
                           "  executor's threads wait within their handoff spin), by the wait's length; the\n"
                           "  work reads K KiB of weights each round (default 16: no cache effects)\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  std::vector<float> y(256, 1.0f), w(static_cast<std::size_t>(footprint_kib) * 256, 0.5f);  // w [K][256]
  double sink = 0;
  // Size the work to about work_us on this core, back to back, after 0.2 s of it (a core that has
  // just woken runs slower: the effect measured here).
  const auto warm = Clock::now();
  while (seconds_since(warm) < 0.2) sink += work(y, w, 64);
  int rounds = 1;
  for (;;) {
    const auto start = Clock::now();
    sink += work(y, w, rounds);
    const double took_us = seconds_since(start) * 1e6;
    if (took_us >= work_us / 4.0 || rounds > (1 << 22)) {
      rounds = std::max(1, static_cast<int>(rounds * work_us / took_us));
      break;
    }
    rounds *= 2;
  }
  const auto timed = [&](double sleep_us) {
    std::vector<double> extra_us;
    for (int r = 0; r < repeats; ++r) {
      if (sleep_us > 0 && spin) {
        pipetwin::exec::spin_until([] { return false; }, sleep_us * 1e-6);
      } else if (sleep_us > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(sleep_us));
      }
      const auto start = Clock::now();
      sink += work(y, w, rounds);
      extra_us.push_back(seconds_since(start) * 1e6);
    }
    return extra_us;
  };
  const std::vector<double> back_to_back = timed(0);
  const double base_us = quantile(back_to_back, 0.5);
  std::printf("work: %.1f us back to back over %d KiB (median of %d; quartiles %.1f-%.1f)\n", base_us, footprint_kib,
              repeats, quantile(back_to_back, 0.25), quantile(back_to_back, 0.75));
  std::printf("%10s  %12s  %20s\n", spin ? "spun us" : "slept us", "extra us", "quartiles us");
  for (const double sleep_us : {50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 20000.0, 50000.0}) {
    const std::vector<double> after = timed(sleep_us);
    std::printf("%10.0f  %+12.1f  %+9.1f..%+9.1f\n", sleep_us, quantile(after, 0.5) - base_us,
                quantile(after, 0.25) - base_us, quantile(after, 0.75) - base_us);
  }
  return sink == 12345.678 ? 1 : 0;  // keeps the work from being optimised away
}
