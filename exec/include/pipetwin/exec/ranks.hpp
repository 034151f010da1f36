// A run across processes (docs/distributed.md): which rank runs each processor, and the messages
// ranks exchange. The executor core knows only this interface; exec/mpi/ implements it on MPI.
// Every rank builds the same graph and runs the tasks of its own processors; a transfer between
// processors of two ranks runs on the sender's rank and arrives as one message carrying its data;
// a task that waits for a task of another rank is told by a message that it has ended.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/rank_layout.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// A block of memory a message refers to instead of carrying it: GPU memory that a transport able
// to move it (NCCL) sends beside the message's bytes.
struct MessageSpan {
  const void* data = nullptr;
  std::int64_t bytes = 0;
};

struct RankMessage {
  std::int32_t from_rank = 0;
  std::int32_t task = 0;             // the task that ended (and made the bytes, when any)
  std::vector<unsigned char> bytes;  // a transfer's data; empty for "it has ended"
  // Where the message named blocks (MessageSpan): fills the next one, `bytes` long, into the
  // memory given, in the order they were named. Empty from transports that carry only bytes.
  std::function<void(void* into, std::int64_t bytes)> out_of_band;
};

class RankTransport {
 public:
  virtual ~RankTransport() = default;
  virtual std::int32_t rank() const = 0;
  virtual std::int32_t ranks() const = 0;
  // Sends `bytes` about `task` to `to_rank`; returns once the bytes may be reused. Any thread.
  virtual void send(std::int32_t to_rank, std::int32_t task, const std::vector<unsigned char>& bytes) = 0;
  // Hands `bytes` about `task` over for `to_rank` and returns at once: the message travels as the
  // receiving rank takes it, while this rank calls receive() or flush(). Any thread.
  virtual void post(std::int32_t to_rank, std::int32_t task, std::vector<unsigned char> bytes) = 0;
  // Whether this transport can send blocks of memory beside a message's bytes (post_with_spans).
  virtual bool carries_spans() const { return false; }
  // Sends `bytes` and, beside them, the memory of `spans` (which must stay as it is until this
  // returns); only where carries_spans(). Any thread.
  virtual void post_with_spans(std::int32_t to_rank, std::int32_t task, std::vector<unsigned char> bytes,
                               const std::vector<MessageSpan>& spans) {
    if (!spans.empty()) throw Error("internal: this transport between ranks carries only bytes");
    post(to_rank, task, std::move(bytes));
  }
  // Whether messages posted by this rank have not yet all been taken by their receivers.
  virtual bool posting() = 0;
  // Returns once every posted message has been taken; throws after `wait_s` seconds without.
  virtual void flush(double wait_s) = 0;
  // The next message sent to this rank, waiting up to `wait_s` (and moving posted messages on
  // meanwhile); false when none came. One thread.
  virtual bool receive(RankMessage& message, double wait_s) = 0;
  // Every rank's `bytes` at rank 0, in rank order (empty on the others). Every rank calls it.
  virtual std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) = 0;
  // Returns once every rank has called it. Each rank's clock starts at its return, which aligns
  // the ranks' task times to within the barrier's skew.
  virtual void barrier() = 0;
  // The same, but throws when some rank has not called it within `wait_s` seconds (it stopped or
  // hangs), instead of waiting for good. Every rank must make the same call at that point (a
  // transport may match it only with barrier_within on the other ranks). This default waits as
  // barrier() does.
  virtual void barrier_within(double wait_s) {
    (void)wait_s;
    barrier();
  }
  // gather(), but throws when some rank has not come to it within `wait_s` seconds: a barrier
  // with that deadline first, after which no rank's gather waits on a rank that stopped.
  std::vector<std::vector<unsigned char>> gather_within(const std::vector<unsigned char>& bytes, double wait_s) {
    barrier_within(wait_s);
    return gather(bytes);
  }
};

// What TrainingOptions::distribution points at.
struct Distribution {
  RankTransport* transport = nullptr;
  // A task that waits this long for another rank's task, while no message at all reaches its
  // rank, fails naming both tasks and ranks (the other rank died, or a message was lost).
  double message_timeout_s = 60;
};

}  // namespace pipetwin
