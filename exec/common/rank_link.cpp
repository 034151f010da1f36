// Round trips between ranks 0 and 1 (see rank_link.hpp): each message is a float vector packed
// into bytes as a transfer's tensors are, received by polling as the executor's listener does,
// and unpacked; half the round trip's median is the one-way time of its size. The empty
// message's one-way time is the latency, and the largest's extra time over it gives the bandwidth.
// Then each size's cost to the cores: rank 0 packs and posts a message, timing its thread's CPU;
// rank 1 waits until it has surely arrived, then receives and unpacks it, timing its own, and
// answers with that time.
#include "pipetwin/exec/rank_link.hpp"

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include "byte_codec.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

constexpr std::int64_t kFloatsPerMessage[] = {0, 256, 4096, 65536, 262144, 1048576};  // 0 bytes to 4 MiB

void receive_or_throw(RankTransport& transport, RankMessage& message, std::vector<float>& into, double wait_s) {
  if (!transport.receive(message, wait_s)) {
    throw Error("timing the link between ranks 0 and 1: rank " + std::to_string(transport.rank()) + " had no answer from rank " +
                std::to_string(1 - transport.rank()) + " for " + short_number(wait_s) +
                " s: it has stopped or hangs (--message-timeout sets the wait)");
  }
  exec::ByteReader r(message.bytes);
  into.resize(static_cast<std::size_t>(r.count<float>()));
  r.values(into.data(), static_cast<std::int64_t>(into.size()));
}

std::vector<unsigned char> packed(const std::vector<float>& values) {
  exec::ByteWriter w;
  w.values(values.data(), static_cast<std::int64_t>(values.size()));
  return std::move(w.bytes());
}

double thread_cpu_s() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// A fixed cost and a rate from the smallest and the largest (bytes, seconds) points: the empty
// message's seconds, and the largest's bytes over its seconds beyond them.
void fit_line(const std::vector<std::pair<std::int64_t, double>>& points, double* fixed_s, double* bytes_per_s) {
  *fixed_s = points.front().second;
  const double extra_s = points.back().second - *fixed_s;
  *bytes_per_s = extra_s > 0 ? static_cast<double>(points.back().first - points.front().first) / extra_s : 0;
}

}  // namespace

RankLinkTimes time_rank_link(RankTransport& transport, int repeats, double wait_s) {
  if (transport.ranks() < 2) throw Error("timing the link between ranks needs at least 2 ranks (mpirun -np 2 or more)");
  if (repeats < 1) throw Error("timing the link between ranks needs at least one round trip per size");
  if (!(wait_s > 0)) throw Error("timing the link between ranks needs a positive wait for the other rank");
  RankLinkTimes times;
  transport.barrier_within(wait_s);
  const std::int32_t rank = transport.rank();
  if (rank <= 1) {
    const std::int32_t peer = 1 - rank;
    RankMessage message;
    std::vector<float> received;
    for (const std::int64_t floats : kFloatsPerMessage) {
      const std::vector<float> payload(static_cast<std::size_t>(floats), 1.0f);
      std::vector<double> round_trips;
      for (int i = 0; i < repeats + 1; ++i) {  // the first round trip warms the path up
        const auto begin = std::chrono::steady_clock::now();
        if (rank == 0) {
          transport.post(peer, 0, packed(payload));  // as the executor sends
          receive_or_throw(transport, message, received, wait_s);
        } else {
          receive_or_throw(transport, message, received, wait_s);
          transport.post(peer, 0, packed(received));
        }
        if (i > 0) round_trips.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      }
      times.one_way_s.emplace_back(floats * static_cast<std::int64_t>(sizeof(float)), median_of(std::move(round_trips)) / 2);
    }
    transport.flush(wait_s);
    for (std::size_t size = 0; size < times.one_way_s.size(); ++size) {
      const std::int64_t floats = kFloatsPerMessage[size];
      const std::vector<float> payload(static_cast<std::size_t>(floats), 1.0f);
      // Long enough for the message to be there: no polling is timed.
      const auto arrived = std::chrono::duration<double>(3 * times.one_way_s[size].second + 0.5e-3);
      std::vector<double> send_s, receive_s;
      for (int i = 0; i < repeats + 1; ++i) {  // the first warms the path up
        if (rank == 0) {
          const double begin = thread_cpu_s();
          transport.post(peer, 0, packed(payload));
          const double sent = thread_cpu_s() - begin;
          receive_or_throw(transport, message, received, wait_s);  // the receiver's time
          if (i > 0) {
            send_s.push_back(sent);
            receive_s.push_back(received.empty() ? 0.0 : static_cast<double>(received.front()));
          }
        } else {
          std::this_thread::sleep_for(arrived);
          const double begin = thread_cpu_s();
          receive_or_throw(transport, message, received, wait_s);
          const float took = static_cast<float>(thread_cpu_s() - begin);
          transport.post(peer, 0, packed({took}));
        }
      }
      if (rank == 0) {
        times.send_core_each_s.emplace_back(floats * static_cast<std::int64_t>(sizeof(float)), median_of(std::move(send_s)));
        times.receive_core_each_s.emplace_back(floats * static_cast<std::int64_t>(sizeof(float)), median_of(std::move(receive_s)));
      }
    }
    transport.flush(wait_s);
    if (rank == 0) {
      fit_line(times.send_core_each_s, &times.send_core_s, &times.send_core_bytes_per_s);
      fit_line(times.receive_core_each_s, &times.receive_core_s, &times.receive_core_bytes_per_s);
    }
    // The empty message's time is the latency; the largest message's extra time, the bandwidth.
    fit_line(times.one_way_s, &times.latency_s, &times.bytes_per_s);
  }
  // No barrier here: the other ranks went on at once (a barrier's deadline could not tell their
  // wait from ranks 0 and 1 timing), and ranks 0 and 1 each end the job when the other stops.
  return times;
}

}  // namespace pipetwin
