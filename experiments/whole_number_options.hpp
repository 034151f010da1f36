// Command lines of the benchmarks that take only whole-number options (--samples 32 --rounds 3):
// each flag names the int it sets. parse_whole_number_options reads argv into them, or says what
// is wrong (an unknown flag, a missing value, a value that is not a whole number from 1 to
// 100000) and how to get help.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace pipetwin::experiments {

// A flag ("--samples") and the value it sets.
using WholeNumberOption = std::pair<const char*, int*>;

enum class Parsed { run, help_shown, bad };

// Reads argv[1..] into `options`; --help or -h prints `usage` (what follows "usage: <program>")
// and `about` (a line or more on what the program does) to stdout. Errors go to stderr, prefixed
// by `program`.
inline Parsed parse_whole_number_options(int argc, char** argv, const char* program, const char* usage,
                                         const char* about, const std::vector<WholeNumberOption>& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("usage: %s %s\n%s", program, usage, about);
      return Parsed::help_shown;
    }
    int* target = nullptr;
    for (const auto& [name, value] : options) {
      if (flag == name) target = value;
    }
    if (target == nullptr) {
      std::fprintf(stderr, "%s: unknown option %s (see --help)\n", program, flag.c_str());
      return Parsed::bad;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value (see --help)\n", program, flag.c_str());
      return Parsed::bad;
    }
    const char* text = argv[++i];
    char* end = nullptr;
    const long parsed = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || parsed < 1 || parsed > 100000) {
      std::fprintf(stderr, "%s: %s takes a whole number from 1 to 100000, got '%s'\n", program, flag.c_str(), text);
      return Parsed::bad;
    }
    *target = static_cast<int>(parsed);
  }
  return Parsed::run;
}

}  // namespace pipetwin::experiments
