// What a message between two ranks costs (docs/distributed.md): ranks 0 and 1 send messages of
// growing size back and forth through a RankTransport, packed and unpacked as the executor does,
// and a line through the one-way times gives a latency and a bandwidth, the link that
// `pipetwin profile --distributed` writes into a calibration table.
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
};

// Every rank calls it; ranks 0 and 1 time `repeats` round trips per size (at least 2 ranks).
// Valid on ranks 0 and 1; the other ranks get zeros.
RankLinkTimes time_rank_link(RankTransport& transport, int repeats);

}  // namespace pipetwin
