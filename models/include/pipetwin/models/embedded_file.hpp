// A data file compiled into the binary (see cmake/EmbedFiles.cmake).
#pragma once
#include <string>
#include <vector>

namespace pipetwin {

struct EmbeddedFile {
  const char* name;  // base name, e.g. "h100.json"
  const char* text;
};

std::vector<EmbeddedFile> embedded_hardware_files();
std::vector<EmbeddedFile> embedded_link_files();

}  // namespace pipetwin
