// Whether this process was started by an MPI launcher: mpirun (Open MPI, MPICH / PMI) or srun
// (Slurm) set these variables in every rank's environment.
#include <cstdlib>

#include "pipetwin/exec/mpi/mpi_ranks.hpp"

namespace pipetwin::mpi {

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace pipetwin::mpi
