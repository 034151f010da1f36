// Atomic output files for the CLI.
#include "output_file.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {

void write_output_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw Error(path + ": cannot write");
    out << text;
    if (!out.flush()) {
      std::remove(temporary.c_str());
      throw Error(path + ": write failed");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw Error(path + ": cannot write");
  }
}

}  // namespace pipetwin::cli
