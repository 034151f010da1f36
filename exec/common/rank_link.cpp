// Round trips between ranks 0 and 1 (see rank_link.hpp): each message is a float vector packed
// into bytes as a transfer's tensors are, received by polling as the executor's listener does,
// and unpacked; half the round trip's median is the one-way time of its size. The empty
// message's one-way time is the latency, and the largest's extra time over it gives the bandwidth.
#include "pipetwin/exec/rank_link.hpp"

#include <algorithm>
#include <chrono>

#include "byte_codec.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

constexpr double kWaitS = 60;  // a peer that answers no message for this long has stopped

void receive_or_throw(RankTransport& transport, RankMessage& message, std::vector<float>& into) {
  if (!transport.receive(message, kWaitS)) throw Error("timing the link between ranks 0 and 1: no answer for 60 s");
  exec::ByteReader r(message.bytes);
  into.resize(static_cast<std::size_t>(r.count<float>()));
  r.values(into.data(), static_cast<std::int64_t>(into.size()));
}

std::vector<unsigned char> packed(const std::vector<float>& values) {
  exec::ByteWriter w;
  w.values(values.data(), static_cast<std::int64_t>(values.size()));
  return std::move(w.bytes());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

RankLinkTimes time_rank_link(RankTransport& transport, int repeats) {
  if (transport.ranks() < 2) throw Error("timing the link between ranks needs at least 2 ranks (mpirun -np 2 or more)");
  if (repeats < 1) throw Error("timing the link between ranks needs at least one round trip per size");
  RankLinkTimes times;
  transport.barrier();
  const std::int32_t rank = transport.rank();
  if (rank <= 1) {
    const std::int32_t peer = 1 - rank;
    RankMessage message;
    std::vector<float> received;
    for (const std::int64_t floats : {0, 256, 4096, 65536, 262144, 1048576}) {
      const std::vector<float> payload(static_cast<std::size_t>(floats), 1.0f);
      std::vector<double> round_trips;
      for (int i = 0; i < repeats + 1; ++i) {  // the first round trip warms the path up
        const auto begin = std::chrono::steady_clock::now();
        if (rank == 0) {
          transport.post(peer, 0, packed(payload));  // as the executor sends
          receive_or_throw(transport, message, received);
        } else {
          receive_or_throw(transport, message, received);
          transport.post(peer, 0, packed(received));
        }
        if (i > 0) round_trips.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      }
      times.one_way_s.emplace_back(floats * static_cast<std::int64_t>(sizeof(float)), median(round_trips) / 2);
    }
    transport.flush(kWaitS);
    // The empty message's time is the latency; the largest message's extra time, the bandwidth.
    const auto& [largest_bytes, largest_s] = times.one_way_s.back();
    times.latency_s = times.one_way_s.front().second;
    const double extra_s = largest_s - times.latency_s;
    times.bytes_per_s = extra_s > 0 ? static_cast<double>(largest_bytes) / extra_s : 0;
  }
  transport.barrier();
  return times;
}

}  // namespace pipetwin
