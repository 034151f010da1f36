// Rank 0 leads, the other ranks follow (see rank_followers.hpp). A request is one message from
// rank 0 to each follower: a letter (p: profile, r: run, d: done), then a decimal processor
// count (p) or a graph's JSON (r).
#include "rank_followers.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "commands.hpp"
#include "profile_calibration.hpp"
#include "terminal_text.hpp"

namespace pipetwin::cli {
namespace {

constexpr std::int32_t kRequestTag = 0;

int copies_per_rank(int processors, std::int32_t ranks) { return (processors + ranks - 1) / ranks; }

}  // namespace

double checked_message_timeout_s(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    throw Error("--message-timeout must be a positive number of seconds, got " + short_number(seconds));
  }
  return seconds;
}

void with_ranks(bool distributed, double wait_s, const std::function<void(mpi::MpiSession*)>& body) {
  if (!distributed) {
    body(nullptr);
    return;
  }
  mpi::MpiSession session;
  try {
    body(&session);
  } catch (const Error& error) {
    // Rank 0 says it (as main says any command's error) before the barrier, and no rank exits
    // before it: the launcher ends the whole job as soon as one rank exits with an error, which
    // could otherwise cut rank 0 short before its line was written. A rank that does not come
    // to the barrier (it stopped, or it works on where this one failed alone) ends the job.
    if (session.rank() == 0) std::cerr << "pipetwin: error: " << printable(error.what()) << std::endl;
    try {  // a bad --message-timeout is the error being said: the barrier waits the default then
      session.transport().barrier_within(wait_s > 0 && std::isfinite(wait_s) ? wait_s : Distribution{}.message_timeout_s);
    } catch (const std::exception& stuck) {
      end_job(session, stuck);
    }
    throw QuietExit{2};
  }
}

void end_job(mpi::MpiSession& session, const std::exception& error) {
  std::cerr << "pipetwin: rank " << session.rank() << ": error: " << printable(error.what()) << std::endl;
  session.abort_job(1);
}

RankLeader::RankLeader(RankTransport& transport, const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                       double message_timeout_s)
    : transport_(transport), config_(config), executor_(executor), repeats_(repeats), wait_s_(message_timeout_s) {
  distribution_.transport = &transport_;
  distribution_.message_timeout_s = message_timeout_s;
}

RankLeader::~RankLeader() {
  try {
    tell('d', "");
  } catch (...) {  // the job is ending on an error already: the launcher ends the followers
  }
}

void RankLeader::tell(char command, const std::string& text) {
  std::vector<unsigned char> bytes(text.size() + 1);
  bytes[0] = static_cast<unsigned char>(command);
  std::copy(text.begin(), text.end(), bytes.begin() + 1);
  // Posted, then flushed against the deadline: a graph's JSON is large enough that MPI hands it
  // over only when its receiver takes it, and a follower that stopped would hold this rank.
  for (std::int32_t r = 1; r < transport_.ranks(); ++r) transport_.post(r, kRequestTag, bytes);
  transport_.flush(wait_s_);
}

Calibration RankLeader::calibrate(int processors, bool progress) {
  if (processors < transport_.ranks()) return profile_device_calibration(config_, executor_, repeats_, progress, processors);
  tell('p', std::to_string(processors));
  return profile_across_ranks(config_, executor_, repeats_, progress, copies_per_rank(processors, transport_.ranks()), transport_,
                              wait_s_);
}

Runner RankLeader::runner() {
  return [this](const TaskGraph& graph, const Network& network, const BatchSampler& data, const TrainingOptions& options) {
    if (graph.processor_count() < transport_.ranks()) return cpu::run_cpu(graph, network, data, options);
    tell('r', graph_to_json(graph));
    TrainingOptions across = options;
    across.distribution = &distribution_;
    return cpu::run_cpu(graph, network, data, across);
  };
}

void follow_rank_leader(RankTransport& transport, const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                        double message_timeout_s) {
  const ScheduleRequest request = make_request(config);
  const auto data = load_data(executor, request.network, "train");
  TrainingOptions training = training_options(executor);
  Distribution distribution;
  distribution.transport = &transport;
  distribution.message_timeout_s = message_timeout_s;
  training.distribution = &distribution;
  RankMessage request_message;
  for (;;) {
    // Rank 0 may run alone for long (a one-processor baseline, timed): poll gently, so as to take
    // no core from it. The launcher ends this rank if rank 0 dies.
    while (!transport.receive(request_message, 0.0)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (request_message.from_rank != 0 || request_message.task != kRequestTag || request_message.bytes.empty()) {
      throw Error("a follower rank got a message that is no request from rank 0 (task " +
                  std::to_string(request_message.task) + " from rank " + std::to_string(request_message.from_rank) + ")");
    }
    const char command = static_cast<char>(request_message.bytes.front());
    const std::string text(request_message.bytes.begin() + 1, request_message.bytes.end());
    if (command == 'd') return;
    if (command == 'p') {
      profile_across_ranks(config, executor, repeats, false, copies_per_rank(std::stoi(text), transport.ranks()), transport,
                           message_timeout_s);
    } else if (command == 'r') {
      const TaskGraph graph = graph_from_json(text, "rank 0");
      cpu::run_cpu(graph, request.network, graph_sampler(*data, graph, request.network, executor.seed), training);  // validate's
    } else {
      throw Error(std::string("a follower rank got an unknown request '") + command + "' from rank 0");
    }
  }
}

}  // namespace pipetwin::cli
