// A command that runs many executor runs and profiles across processes (`validate --distributed`):
// rank 0 runs the command and leads; every other rank follows, doing at once what rank 0 does
// with every rank: timing its share of a table across ranks, or running a graph rank 0 sends.
// Runs with fewer processors than ranks (the one-processor baselines) and their tables are rank
// 0's alone, while the followers wait (polling, so that they take no core from it).
#pragma once
#include <functional>

#include "executor_setup.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cli {

class RankLeader {
 public:
  // `config`, `executor` and `repeats` as every rank was given them (the same command line).
  RankLeader(RankTransport& transport, const GraphConfig& config, const ExecutorOptions& executor, int repeats,
             double message_timeout_s);
  ~RankLeader();  // tells the followers the command is done (they return)
  RankLeader(const RankLeader&) = delete;
  RankLeader& operator=(const RankLeader&) = delete;

  // A calibration for `processors` processors: rank 0 alone for fewer than ranks, else every
  // rank at once (profile_across_ranks).
  Calibration calibrate(int processors, bool progress);
  // Runs `graph`: rank 0 alone for fewer processors than ranks, else across every rank.
  Runner runner();

 private:
  void tell(char command, const std::string& text);
  RankTransport& transport_;
  GraphConfig config_;
  ExecutorOptions executor_;
  int repeats_;
  double wait_s_;  // --message-timeout: how long a request or a shared step waits for the followers
  Distribution distribution_;
};

// A command's body, in one process (null session) or, with `distributed`, in an MPI session.
// Errors the body throws before its ranks part ways are every rank's alike: rank 0 reports them
// (as any command's error), then every rank exits with status 2 after a barrier. A rank that has
// not come to that barrier within `wait_s` seconds (--message-timeout) ends the job (end_job).
void with_ranks(bool distributed, double wait_s, const std::function<void(mpi::MpiSession*)>& body);

// --message-timeout as given, when it is a positive, finite number of seconds; throws otherwise.
double checked_message_timeout_s(double seconds);

// One rank's own error once the ranks work apart: one line naming the rank, then the whole job
// ends (MPI_Abort).
[[noreturn]] void end_job(mpi::MpiSession& session, const std::exception& error);

// The other ranks' side: does what rank 0's RankLeader asks until it is done.
void follow_rank_leader(RankTransport& transport, const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                        double message_timeout_s);

}  // namespace pipetwin::cli
