// What a message between two ranks costs (docs/distributed.md): ranks 0 and 1 send messages of
// growing size back and forth through a RankTransport, packed and unpacked as the executor does,
// and a line through the one-way times gives a latency and a bandwidth, the link that
// `pipetwin profile --distributed` writes into a calibration table. Each message's cost to the
// cores is timed too (thread CPU time, the message already waiting): the sender's, packing and
// posting it, and the receiver's, taking it from MPI and unpacking it. A line through each gives
// a fixed cost and a rate, which the graph builder charges to the processors (copies_on_cores).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "pipetwin/exec/ranks.hpp"

namespace pipetwin {

struct RankLinkTimes {
  double latency_s = 0;      // one way, for an empty message
  double bytes_per_s = 0;    // the largest message's bytes over its time beyond the latency
  std::vector<std::pair<std::int64_t, double>> one_way_s;  // (bytes, median one-way seconds)
  // Thread CPU seconds per message: fixed, and bytes per second beyond it (0: not measured).
  double send_core_s = 0, send_core_bytes_per_s = 0;
  double receive_core_s = 0, receive_core_bytes_per_s = 0;
  std::vector<std::pair<std::int64_t, double>> send_core_each_s, receive_core_each_s;  // (bytes, median)
};

// Every rank calls it, about together (it starts with a barrier); ranks 0 and 1 time `repeats`
// round trips per size (at least 2 ranks), the others return at once. Valid on ranks 0 and 1;
// the other ranks get zeros. Throws when a rank waits `wait_s` seconds (--message-timeout) at
// that barrier or for an answer: the rank waited for stopped or hangs.
RankLinkTimes time_rank_link(RankTransport& transport, int repeats, double wait_s);

}  // namespace pipetwin
