// The RankTransport on MPI_COMM_WORLD: a message is one MPI_Isend of bytes tagged with its task
// (MPI_THREAD_MULTIPLE: every worker thread posts; the rank's listener receives and moves the
// posted sends on), polled with MPI_Iprobe and MPI_Test, so that a waiting thread sleeps instead
// of spinning on a shared core.
#include "pipetwin/exec/mpi/mpi_ranks.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "pipetwin/models/error.hpp"

namespace pipetwin::mpi {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// Polling for a message (or a send's completion): a few quick polls for one about to come, then
// short sleeps between polls, since ranks may share cores.
constexpr int kSpinPolls = 64;
constexpr auto kPollSleep = std::chrono::microseconds(20);

int byte_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw Error("a message between ranks of " + std::to_string(bytes) + " bytes is larger than one MPI message (2 GiB)");
  }
  return static_cast<int>(bytes);
}

class MpiTransport final : public RankTransport {
 public:
  MpiTransport(std::int32_t rank, std::int32_t ranks) : rank_(rank), ranks_(ranks) {
    int* upper = nullptr;
    int found = 0;
    check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
    tag_limit_ = found != 0 && upper != nullptr ? *upper : 32767;  // the least the standard allows
  }
  // A run flushes its messages; one that failed may leave some: they get a second to go before
  // MPI ends, and are then left to it.
  ~MpiTransport() override {
    try {
      flush(1.0);
    } catch (...) {
    }
  }
  std::int32_t rank() const override { return rank_; }
  std::int32_t ranks() const override { return ranks_; }

  void send(std::int32_t to_rank, std::int32_t task, const std::vector<unsigned char>& bytes) override {
    check_tag(task);
    // Not MPI_Send: a large message waits for its receiver to take it, and Open MPI would spin a
    // core meanwhile. The sending thread polls, then sleeps between polls, as the listener does.
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(bytes.data(), byte_count(bytes.size()), MPI_BYTE, to_rank, task, MPI_COMM_WORLD, &request), "MPI_Isend");
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done != 0) return;
      if (polls >= kSpinPolls) std::this_thread::sleep_for(kPollSleep);
    }
  }

  void post(std::int32_t to_rank, std::int32_t task, std::vector<unsigned char> bytes) override {
    check_tag(task);
    std::lock_guard<std::mutex> lock(posted_mutex_);
    posted_.push_back({MPI_REQUEST_NULL, std::move(bytes)});
    Posted& p = posted_.back();
    check(MPI_Isend(p.bytes.data(), byte_count(p.bytes.size()), MPI_BYTE, to_rank, task, MPI_COMM_WORLD, &p.request),
          "MPI_Isend");
  }

  bool posting() override {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    move_posted_on();
    return !posted_.empty();
  }

  void flush(double wait_s) override {
    const auto until = deadline(wait_s);
    for (int polls = 0; posting(); ++polls) {
      if (std::chrono::steady_clock::now() >= until) {
        throw Error("messages from rank " + std::to_string(rank_) + " were not taken by their receivers within " +
                    short_number(wait_s) + " s: a rank has stopped or hangs (--message-timeout sets the wait)");
      }
      if (polls >= kSpinPolls) std::this_thread::sleep_for(kPollSleep);
    }
  }

  bool receive(RankMessage& message, double wait_s) override {
    const auto until = deadline(wait_s);
    for (int polls = 0;; ++polls) {
      if (polls % 16 == 0) posting();  // sends in flight move on as this rank polls
      int ready = 0;
      MPI_Status status;
      check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &status), "MPI_Iprobe");
      if (ready != 0) {
        int count = 0;
        check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
        message.from_rank = status.MPI_SOURCE;
        message.task = status.MPI_TAG;
        message.bytes.resize(static_cast<std::size_t>(count));
        check(MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
        return true;
      }
      if (std::chrono::steady_clock::now() >= until) return false;
      if (polls >= kSpinPolls) std::this_thread::sleep_for(kPollSleep);
    }
  }

  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override {
    int mine = byte_count(bytes.size());
    std::vector<int> sizes(static_cast<std::size_t>(rank_ == 0 ? ranks_ : 0));
    check(MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    std::vector<int> offsets(sizes.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      offsets[r] = byte_count(total);
      total += static_cast<std::size_t>(sizes[r]);
    }
    std::vector<unsigned char> all(std::max<std::size_t>(total, 1));
    check(MPI_Gatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0, MPI_COMM_WORLD),
          "MPI_Gatherv");
    std::vector<std::vector<unsigned char>> out;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + sizes[r]);
    }
    return out;
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  // MPI_Ibarrier polled against a deadline (MPI_Barrier has none). It yields between polls rather
  // than sleeping: the ranks' clocks start at its return, so it should return as soon as it can.
  // On a timeout the request is left to MPI_Abort, which the caller's error ends the job with.
  void barrier_within(double wait_s) override {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    const auto until = deadline(wait_s);
    for (;;) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done != 0) return;
      if (std::chrono::steady_clock::now() >= until) {
        throw Error("rank " + std::to_string(rank_) + " waited " + short_number(wait_s) +
                    " s at a barrier for the other ranks: a rank has stopped or hangs (--message-timeout sets the wait)");
      }
      std::this_thread::yield();
    }
  }

 private:
  struct Posted {
    MPI_Request request;
    std::vector<unsigned char> bytes;  // read by MPI until the request completes
  };
  static std::chrono::steady_clock::time_point deadline(double wait_s) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait_s));
  }
  void check_tag(std::int32_t task) const {
    if (task < 0 || task > tag_limit_) {
      throw Error("task " + std::to_string(task) + " is beyond this MPI's largest message tag (" + std::to_string(tag_limit_) + ")");
    }
  }
  // Completes what it can of the posted sends and frees their bytes (under posted_mutex_).
  void move_posted_on() {
    for (auto it = posted_.begin(); it != posted_.end();) {
      int done = 0;
      check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      it = done != 0 ? posted_.erase(it) : std::next(it);
    }
  }

  std::int32_t rank_;
  std::int32_t ranks_;
  int tag_limit_ = 32767;
  std::mutex posted_mutex_;
  std::list<Posted> posted_;  // in posting order; a list keeps each one's bytes in place
};

}  // namespace

MpiSession::MpiSession() {
  int initialised = 0;
  check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (initialised != 0) throw Error("MPI is already initialised in this process (one MpiSession per process)");
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw Error("this MPI library cannot be called from several threads at once (MPI_THREAD_MULTIPLE), which the executor needs");
  }
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  rank_ = rank;
  ranks_ = ranks;
  transport_ = std::make_unique<MpiTransport>(rank_, ranks_);
}

MpiSession::~MpiSession() {
  transport_.reset();
  MPI_Finalize();
}

void MpiSession::abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; should it, the process ends all the same
}

}  // namespace pipetwin::mpi
