// fork() workers that take jobs as they free up: the parent hands each worker one job index at a
// time over a socket pair and the worker answers "index<TAB>line"; the parent polls them all.
#include "process_pool.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {
namespace {

// All of `text` on the socket `fd`; false when the other side is gone (no SIGPIPE).
bool send_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::send(fd, text.data() + written, text.size() - written, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// In a worker: job indices, one a line, until the parent shuts its side; each answered in turn.
void serve_jobs(int fd, std::size_t jobs, const std::function<std::string(std::size_t)>& job) {
  std::string pending;
  char chunk[256];
  for (;;) {
    std::size_t line_end;
    while ((line_end = pending.find('\n')) != std::string::npos) {
      const std::size_t index = std::stoul(pending.substr(0, line_end));
      pending.erase(0, line_end + 1);
      if (index >= jobs) _exit(4);
      if (!send_all(fd, std::to_string(index) + "\t" + job(index) + "\n")) _exit(3);  // the parent is gone
    }
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // no more jobs
    pending.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::vector<std::string> run_in_processes(std::size_t jobs, int workers,
                                          const std::function<std::string(std::size_t)>& job,
                                          const std::function<void(std::size_t)>& progress,
                                          const std::function<std::string(std::size_t)>& name_job) {
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
    int fd;              // the parent's end of the socket pair: job indices out, answers in
    std::string buffer;  // an answer's first part, until its newline arrives
    std::size_t in_hand = SIZE_MAX;  // the job it was given and has not answered, or SIZE_MAX
  };
  std::vector<Child> children;
  for (int w = 0; w < workers; ++w) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      throw Error(std::string("cannot create a socket pair: ") + std::strerror(errno));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(std::string("cannot start a worker process: ") + std::strerror(errno));
    if (pid == 0) {
      // Die with the parent (killed, or gone for any reason) instead of working on unread.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(1);  // it went before the line above took effect
      ::close(fds[0]);
      // The earlier workers' ends: held here, they would keep those workers from seeing the end of their jobs.
      for (const auto& other : children) ::close(other.fd);
      serve_jobs(fds[1], jobs, job);
      ::close(fds[1]);
      _exit(0);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0], {}, SIZE_MAX});
  }
  // One job in hand per worker: a second would wait behind a long first one while others idle.
  std::size_t next = 0, done = 0, open = children.size();
  auto give_next = [&](Child& child) {
    if (next < jobs && send_all(child.fd, std::to_string(next) + "\n")) {  // false: that worker is gone
      child.in_hand = next++;
    } else if (next >= jobs) {
      ::shutdown(child.fd, SHUT_WR);  // no more: the worker ends after its last answer
    }
  };
  for (auto& child : children) give_next(child);
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
        child.in_hand = SIZE_MAX;
        progress(++done);
        give_next(child);
      }
    }
  }
  std::string died;  // how the first worker that died ended, and on which job
  for (const auto& child : children) {
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    if (died.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      died = WIFSIGNALED(status) ? std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                       strsignal(WTERMSIG(status)) + ")"
                                 : "exit status " + std::to_string(WEXITSTATUS(status));
      if (child.in_hand != SIZE_MAX) died += " while running " + name_job(child.in_hand);
    }
  }
  if (!died.empty() || done != jobs) {
    throw Error("a worker process died before finishing its configurations (" + std::to_string(done) + " of " +
                std::to_string(jobs) + " came back)" + (died.empty() ? "" : ": " + died));
  }
  return results;
}

std::string describe_workers(std::size_t jobs, int workers) {
  if (workers <= 1 || jobs <= 1) return "in this process";
  const std::size_t used = std::min<std::size_t>(static_cast<std::size_t>(workers), jobs);
  return std::to_string(used) + " worker processes";
}

}  // namespace pipetwin::cli
