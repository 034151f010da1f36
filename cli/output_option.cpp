// Output-file options checked as the command line is read (output_option.hpp).
#include "output_option.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"

namespace pipetwin::cli {

CLI::Validator writable_output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        try {
          check_output_file(path);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "", "writable output file");
}

}  // namespace pipetwin::cli
