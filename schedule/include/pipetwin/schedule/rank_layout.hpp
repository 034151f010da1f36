// Which MPI rank runs each processor of a run across processes (docs/distributed.md): contiguous
// blocks of processors per rank. The executor places its threads by it, and the graph builder
// prices the messages between ranks by it (copies_on_cores.hpp).
#pragma once
#include <cstdint>

#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// The rank of processor `processor` of `processors` on `ranks` ranks: contiguous blocks
// (processor x ranks / processors), so ranks = processors gives one processor each.
inline std::int32_t rank_of_processor(std::int32_t processor, std::int32_t processors, std::int32_t ranks) {
  return static_cast<std::int32_t>(static_cast<std::int64_t>(processor) * ranks / processors);
}

// The lowest-numbered processor of rank `rank` (each rank has one where ranks <= processors).
inline std::int32_t first_processor_of_rank(std::int32_t rank, std::int32_t processors, std::int32_t ranks) {
  std::int32_t p = 0;
  while (p + 1 < processors && rank_of_processor(p, processors, ranks) < rank) ++p;
  return p;
}

// The rank that runs a link's transfers: its processor end's (the sender's, between two processors).
inline std::int32_t rank_of_link(const LinkInfo& link, std::int32_t processors, std::int32_t ranks) {
  return rank_of_processor(link.src != kHost ? link.src : link.dst, processors, ranks);
}

}  // namespace pipetwin
