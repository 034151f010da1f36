// The choice of how tensors travel between ranks in a build whose CUDA toolkit has no nccl.h
// (nccl_transport.hpp): always through host memory over MPI; asking for NCCL is an error.
#include "nccl_transport.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {

RankLinkChoice choose_rank_link(RankTransport&, int, const std::string& asked) {
  if (asked != "auto" && asked != "mpi" && asked != "nccl") {
    throw Error("--rank-link must be auto, mpi or nccl, got '" + asked + "'");
  }
  if (asked == "nccl") throw Error("--rank-link nccl: this pipetwin was built without NCCL (nccl.h was not found with the CUDA toolkit)");
  return {false, "through host memory over MPI (this build has no NCCL)"};
}

std::unique_ptr<RankTransport> make_nccl_transport(RankTransport&, int, double) {
  throw Error("this pipetwin was built without NCCL (nccl.h was not found with the CUDA toolkit)");
}

}  // namespace pipetwin::cuda
