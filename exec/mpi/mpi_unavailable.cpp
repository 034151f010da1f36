// Built when CMake found no MPI: runs across processes are refused with what to install.
#include "pipetwin/exec/mpi/mpi_ranks.hpp"

#include <cstdlib>

#include "pipetwin/models/error.hpp"

namespace pipetwin::mpi {

MpiSession::MpiSession() {
  throw Error("this pipetwin was built without MPI, so it cannot run across processes "
              "(install Open MPI, e.g. apt-get install libopenmpi-dev openmpi-bin, and build again)");
}

MpiSession::~MpiSession() = default;

void MpiSession::abort_job(int exit_code) { std::_Exit(exit_code); }

}  // namespace pipetwin::mpi
