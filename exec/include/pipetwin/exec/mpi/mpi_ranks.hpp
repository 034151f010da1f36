// Runs across processes on MPI (docs/distributed.md): the MPI session of a process launched by
// mpirun or srun, and the RankTransport (ranks.hpp) on MPI_COMM_WORLD. Built when CMake finds MPI
// (Debian's Open MPI); otherwise MpiSession's constructor throws saying the build has none.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipetwin/exec/ranks.hpp"

namespace pipetwin::mpi {

// MPI_Init_thread (threads may call MPI at once) on construction, MPI_Finalize on destruction.
// One per process. Throws pipetwin::Error when the build has no MPI or MPI cannot start.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  std::int32_t rank() const { return rank_; }
  std::int32_t ranks() const { return ranks_; }
  RankTransport& transport() { return *transport_; }
  // Ends every rank of the job at once (MPI_Abort), after the caller has printed why.
  [[noreturn]] void abort_job(int exit_code);

 private:
  std::int32_t rank_ = 0;
  std::int32_t ranks_ = 1;
  std::unique_ptr<RankTransport> transport_;
};

}  // namespace pipetwin::mpi
