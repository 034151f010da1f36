// Ctrl-C (SIGINT) and SIGTERM as a request to stop that a long command polls, so that it can end
// where its results still hold together (validate: after the round under way) and report them; a
// second signal ends the process at once, as without the request.
#pragma once
#include <string>

namespace pipetwin::cli {

// While one lives, SIGINT and SIGTERM set the flag `requested()` reads and write `notice` to
// stderr (the first time); the handlers before it come back when it ends. One at a time.
class StopSignals {
 public:
  explicit StopSignals(const std::string& notice);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  bool requested() const;
};

}  // namespace pipetwin::cli
