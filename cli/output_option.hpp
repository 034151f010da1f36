// The check every output-file option takes (--csv, --trace, -o, ...): a path that cannot be
// written is refused when the command line is read, not after the work whose result it holds.
#pragma once
#include <CLI/CLI.hpp>

namespace pipetwin::cli {

// A CLI11 check: the error write_output_file would give for the path ("-" is standard output).
CLI::Validator writable_output_file();

}  // namespace pipetwin::cli
