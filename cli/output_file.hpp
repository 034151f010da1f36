// Writing a user's output file whole or not at all ("-" is standard output).
#pragma once
#include <string>

namespace pipetwin::cli {

// Writes to PATH.partial and renames it to PATH, so a failure never leaves half a file.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace pipetwin::cli
