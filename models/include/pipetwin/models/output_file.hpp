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

// Throws the error write_output_file would give for `path` itself (empty, a directory, a folder
// that does not exist, a symbolic link that cannot be followed), writing nothing: for front ends
// to check an output option before the work whose result it is to hold.
void check_output_file(const std::string& path);

}  // namespace pipetwin
