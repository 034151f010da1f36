// Benchmark: the thread handoff a profile times (measure_handoff_s, exec/common/profiling.cpp),
// measured again and again after sleeps of several lengths: how much one measurement varies,
// and how the handoff grows with the sleep before it (docs/cuda-executor.md, "Measured on an
// H200": a table's handoff ran from 48 to 170 us over six rounds on one machine).
//
//   pipetwin_handoff_benchmark [--idle-us 100,300,1000,3000,10000] [--measurements 8] [--repeats 16]
//                              [--spin-us 0]
//
// Each measurement is what a profile takes: the mean over the fastest 95% of a run of handoffs,
// each to a thread that was busy for the idle length before (about 0.1 s of them, at least 30 and
// at most 20 x repeats). Prints each idle length's measurements in microseconds, their median,
// smallest and largest; asserts nothing. Runs on any machine (no GPU).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipetwin/exec/profiling.hpp"

namespace {

double number_of(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw std::invalid_argument("not a number: '" + text + "'");
  return value;
}

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) values.push_back(number_of(item));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> idle_us{100, 300, 1000, 3000, 10000};
  int measurements = 8, repeats = 16;
  double spin_us = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::puts("usage: pipetwin_handoff_benchmark [--idle-us 100,300,1000,3000,10000] [--measurements 8] [--repeats 16] "
                  "[--spin-us 0]\n  each idle length's handoff, measured as a profile measures it, several times (us)");
        return 0;
      }
      if (arg != "--idle-us" && arg != "--measurements" && arg != "--repeats" && arg != "--spin-us") {
        throw std::invalid_argument("unknown option " + arg);
      }
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--idle-us") idle_us = parse_list(value);
      else if (arg == "--measurements") measurements = static_cast<int>(number_of(value));
      else if (arg == "--repeats") repeats = static_cast<int>(number_of(value));
      else spin_us = number_of(value);
    }
    if (measurements < 1 || repeats < 1 || spin_us < 0 || idle_us.empty()) throw std::invalid_argument("counts must be positive");
    for (const double idle : idle_us) {
      if (idle < 0 || idle > 10000) throw std::invalid_argument("an idle length must be from 0 to 10000 us");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipetwin_handoff_benchmark: %s (see --help)\n", e.what());
    return 2;
  }
  std::printf("%10s %9s %9s %9s   measurements (us)\n", "idle_us", "median", "least", "most");
  for (const double idle : idle_us) {
    std::vector<double> handoffs_us;
    for (int m = 0; m < measurements; ++m) {
      handoffs_us.push_back(pipetwin::measure_handoff_s(repeats, idle * 1e-6, spin_us * 1e-6) * 1e6);
    }
    std::vector<double> sorted = handoffs_us;
    std::sort(sorted.begin(), sorted.end());
    std::printf("%10.0f %9.1f %9.1f %9.1f  ", idle, sorted[sorted.size() / 2], sorted.front(), sorted.back());
    for (const double h : handoffs_us) std::printf(" %.1f", h);
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
