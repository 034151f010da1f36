// Writing a user's output file whole or not at all, without destroying what the path names.
#pragma once
#include <string>

namespace pipetwin {

// Writes `text` to `path` ("-": standard output):
//  - a regular file, new or existing, is written to a temporary file beside it and renamed over
//    it, so a failure never leaves half a file;
//  - a symbolic link is written through: its target is replaced, the link stays;
//  - anything else that exists and is not a directory (a device such as /dev/null, a FIFO, a
//    terminal) is opened and written in place, never replaced;
//  - a directory, or a path whose folder does not exist, is an error naming the path.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace pipetwin
