// A reading of the machine's speed: a fixed piece of arithmetic timed on each CPU (speed_probe.hpp).
#include "pipetwin/exec/cpu/speed_probe.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "pipetwin/exec/thread_pinning.hpp"
#include "vector_clones.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// y = y * 0.9999 + 0.0001 over 256 floats, `passes` times: independent lanes, so the loop is as
// fast as the core's vector units (one clone per vector ISA, picked at load time; this file is
// built with -O3). It converges to 1: no overflow, no denormals.
PIPETWIN_VECTOR_CLONES
float multiply_adds(float* y, int passes) {
  for (int p = 0; p < passes; ++p) {
    for (int j = 0; j < 256; ++j) y[j] = y[j] * 0.9999f + 0.0001f;
  }
  return y[0] + y[255];
}

// The fixed work: about 16 million multiply-adds.
constexpr int kPasses = 64 * 1024;

double fastest_of_timings(int repeats) {
  std::vector<double> seconds;
  float y[256];  // [256] lanes
  for (int r = 0; r < repeats; ++r) {
    for (int j = 0; j < 256; ++j) y[j] = 0.5f + 0.001f * static_cast<float>(j);
    const Clock::time_point start = Clock::now();
    volatile float sink = multiply_adds(y, kPasses);
    static_cast<void>(sink);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return *std::min_element(seconds.begin(), seconds.end());
}

}  // namespace

std::vector<double> time_fixed_work_s(const std::vector<int>& cpus, int repeats) {
  if (repeats < 1) throw Error("speed probe: repeats must be at least 1, got " + std::to_string(repeats));
  if (cpus.empty()) return {fastest_of_timings(repeats)};
  std::vector<double> seconds;
  for (const int cpu : cpus) {
    double reading = 0;
    std::exception_ptr failure;
    std::thread probe([&] {
      try {
        pin_this_thread(cpu);
        reading = fastest_of_timings(repeats);
      } catch (...) {
        failure = std::current_exception();
      }
    });
    probe.join();
    if (failure) std::rethrow_exception(failure);
    seconds.push_back(reading);
  }
  return seconds;
}

std::vector<int> cpus_to_read(const std::vector<int>& pinned_cpus, int largest_processors) {
  std::vector<int> cpus = pinned_cpus.empty() ? usable_cpu_ids() : pinned_cpus;
  const int most = pinned_cpus.empty() ? kMostReadCpus : std::max(1, largest_processors);
  if (static_cast<int>(cpus.size()) > most) cpus.resize(static_cast<std::size_t>(most));
  return cpus;
}

}  // namespace pipetwin::cpu
