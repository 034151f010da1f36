// How the CUDA executor's tensors travel between ranks (docs/distributed.md): through host memory
// over the run's own transport (MPI), or GPU to GPU with NCCL. choose_rank_link agrees on one for
// every rank; the NCCL transport wraps the MPI one: a message's bytes still travel over MPI, and the
// GPU memory they name (MessageSpan) follows by ncclSend / ncclRecv. No CUDA or NCCL header here.
#pragma once
#include <memory>
#include <string>

#include "pipetwin/exec/ranks.hpp"

namespace pipetwin::cuda {

struct RankLinkChoice {
  bool nccl = false;
  std::string why;  // one line: why NCCL or why not
};

// Every rank calls it, with the GPU its processors run on and the --rank-link asked for (auto,
// mpi, nccl). NCCL is chosen where asked (auto or nccl), libnccl.so.2 loads on every rank and no
// two ranks of one host share a GPU (NCCL refuses that: "Duplicate GPU detected"). Throws on every
// rank, with the reason, when nccl was asked for and cannot be had.
RankLinkChoice choose_rank_link(RankTransport& transport, int device, const std::string& asked);

// The NCCL transport over `bytes` (which it does not own), for this rank's GPU `device`: one
// communicator per sending rank, so that a rank's sends and its listener's receives never share
// one. A send or receive that has not completed after `wait_s` seconds (its peer died) throws.
// Every rank calls it after choose_rank_link chose NCCL.
std::unique_ptr<RankTransport> make_nccl_transport(RankTransport& bytes, int device, double wait_s);

}  // namespace pipetwin::cuda
