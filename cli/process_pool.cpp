// fork() workers that write "index<TAB>line" records to a pipe each; the parent polls them.
#include "process_pool.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {
namespace {

void write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::vector<std::string> run_in_processes(std::size_t jobs, int workers,
                                          const std::function<std::string(std::size_t)>& job,
                                          const std::function<void(std::size_t)>& progress) {
  std::vector<std::string> results(jobs);
  if (workers <= 1 || jobs <= 1) {
    for (std::size_t i = 0; i < jobs; ++i) {
      results[i] = job(i);
      progress(i + 1);
    }
    return results;
  }
  workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(workers), jobs));
  struct Child {
    pid_t pid;
    int fd;
    std::string buffer;
  };
  std::vector<Child> children;
  for (int w = 0; w < workers; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("cannot start a worker process: ") + std::strerror(errno));
    if (pid == 0) {
      // Die with the parent (killed, or gone for any reason) instead of working on unread.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(1);  // it went before the line above took effect
      ::close(fds[0]);
      for (const auto& other : children) ::close(other.fd);
      for (std::size_t i = static_cast<std::size_t>(w); i < jobs; i += static_cast<std::size_t>(workers)) {
        write_all(fds[1], std::to_string(i) + "\t" + job(i) + "\n");
      }
      ::close(fds[1]);
      _exit(0);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0], {}});
  }
  std::size_t done = 0, open = children.size();
  std::vector<pollfd> polls;
  std::vector<Child*> polled;
  while (open > 0) {
    polls.clear();
    polled.clear();
    for (auto& child : children) {
      if (child.fd < 0) continue;
      polls.push_back({child.fd, POLLIN, 0});
      polled.push_back(&child);
    }
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("poll failed: ") + std::strerror(errno));
    }
    for (std::size_t k = 0; k < polls.size(); ++k) {
      if (polls[k].revents == 0) continue;
      Child& child = *polled[k];
      char chunk[65536];
      const ssize_t n = ::read(child.fd, chunk, sizeof chunk);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ::close(child.fd);
        child.fd = -1;
        --open;
        continue;
      }
      child.buffer.append(chunk, static_cast<std::size_t>(n));
      std::size_t line_end;
      while ((line_end = child.buffer.find('\n')) != std::string::npos) {
        const std::string line = child.buffer.substr(0, line_end);
        child.buffer.erase(0, line_end + 1);
        const std::size_t tab = line.find('\t');
        const std::size_t index = std::stoul(line.substr(0, tab));
        if (index < jobs) results[index] = line.substr(tab + 1);
        progress(++done);
      }
    }
  }
  bool crashed = false;
  for (const auto& child : children) {
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    crashed = crashed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (crashed || done != jobs) {
    throw Error("a worker process died before finishing its configurations (" +
                std::to_string(done) + " of " + std::to_string(jobs) + " came back)");
  }
  return results;
}

}  // namespace pipetwin::cli
