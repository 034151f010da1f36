// SIGINT and SIGTERM as a request to stop (stop_signals.hpp). A signal handler may only touch a
// flag of type sig_atomic_t and write what was made before, so the flag, the saved handlers and
// the notice live here, at file scope: the one place this program keeps such state.
#include "stop_signals.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {
namespace {

volatile std::sig_atomic_t stop_signals_seen = 0;
bool installed = false;
char notice_text[256];
std::size_t notice_size = 0;
struct sigaction before_int, before_term;

extern "C" void on_stop_signal(int signal_number) {
  if (stop_signals_seen > 0) {  // the second: as if no request had been asked for
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  stop_signals_seen = 1;
  const ssize_t written = ::write(STDERR_FILENO, notice_text, notice_size);
  static_cast<void>(written);
}

}  // namespace

StopSignals::StopSignals(const std::string& notice) {
  if (installed) throw Error("internal: two stop-signal handlers at once");
  notice_size = std::min(notice.size(), sizeof(notice_text));
  std::memcpy(notice_text, notice.data(), notice_size);
  stop_signals_seen = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // the executor's threads' waits and reads go on
  sigaction(SIGINT, &action, &before_int);
  sigaction(SIGTERM, &action, &before_term);
  installed = true;
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &before_int, nullptr);
  sigaction(SIGTERM, &before_term, nullptr);
  installed = false;
}

bool StopSignals::requested() const { return stop_signals_seen > 0; }

}  // namespace pipetwin::cli
