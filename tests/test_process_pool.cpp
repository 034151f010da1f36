// The CLI's pool of worker processes (cli/process_pool.cpp): every job's answer at its index, a
// worker held by a long job leaving the rest to the others, and a worker's death reported.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../cli/process_pool.hpp"
#include "pipetwin/models/error.hpp"
#include "temporary_folder.hpp"

namespace pipetwin::cli {
namespace {

std::size_t files_in(const std::filesystem::path& folder) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) count += entry.is_regular_file() ? 1 : 0;
  return count;
}

}  // namespace

TEST_CASE("process pool: each answer lands at its job's index, with progress for every job") {
  for (const int workers : {1, 2, 3, 16}) {
    CAPTURE(workers);
    std::vector<std::size_t> progress;
    const auto answers = run_in_processes(
        7, workers, [](std::size_t i) { return "job " + std::to_string(i * i); },
        [&](std::size_t done) { progress.push_back(done); }, [](std::size_t i) { return std::to_string(i); });
    REQUIRE(answers.size() == 7);
    for (std::size_t i = 0; i < 7; ++i) CHECK(answers[i] == "job " + std::to_string(i * i));
    CHECK(progress == std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7});
  }
  CHECK(run_in_processes(0, 4, [](std::size_t) { return std::string("x"); }, [](std::size_t) {}, [](std::size_t) {
          return std::string();
        }).empty());
  CHECK(describe_workers(7, 16) == "7 worker processes");
  CHECK(describe_workers(7, 2) == "2 worker processes");
  CHECK(describe_workers(1, 16) == "in this process");
  CHECK(describe_workers(7, 1) == "in this process");
}

// Jobs handed out as workers free up, not dealt out in advance: job 0 waits for every other job
// to finish, which it can only see if the other worker takes them all (dealt round-robin, jobs
// 2, 4 and 6 would wait behind job 0 and it would time out).
TEST_CASE("process pool: a worker busy with a long job leaves every other job to the free worker") {
  const test::TemporaryFolder folder("pool");
  constexpr std::size_t kJobs = 8;
  const auto answers = run_in_processes(
      kJobs, 2,
      [&](std::size_t i) -> std::string {
        if (i != 0) {
          std::ofstream(folder.file("done-" + std::to_string(i))) << i;
          return "done";
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (files_in(folder.path()) < kJobs - 1 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return "saw " + std::to_string(files_in(folder.path())) + " others done";
      },
      [](std::size_t) {}, [](std::size_t i) { return std::to_string(i); });
  CHECK(answers[0] == "saw 7 others done");
}

TEST_CASE("process pool: a worker that dies is an error naming how it ended and the job it was on") {
  auto error_of = [](const std::function<std::string(std::size_t)>& job) {
    try {
      run_in_processes(4, 2, job, [](std::size_t) {}, [](std::size_t i) { return "job " + std::to_string(i); });
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of([](std::size_t i) -> std::string {
          if (i == 3) _exit(7);  // in a worker process: as if it failed
          return "ok";
        }) == "a worker process died before finishing its configurations (3 of 4 came back): exit status 7 while "
              "running job 3");
  CHECK(error_of([](std::size_t i) -> std::string {
          if (i == 2) ::kill(::getpid(), SIGKILL);  // as if killed (a handler of doctest's would report a SIGSEGV)
          return "ok";
        }) == "a worker process died before finishing its configurations (3 of 4 came back): killed by signal " +
                  std::to_string(SIGKILL) + " (" + strsignal(SIGKILL) + ") while running job 2");
}

}  // namespace pipetwin::cli
