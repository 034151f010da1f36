// Runs under `mpirun -np N` (tests/CMakeLists.txt): every schedule on lenet5 and resnet8, trained
// across the N ranks (one processor per rank, two per rank where the schedule allows, and with
// recomputation where the schedule has it), must end with weights and losses bit-equal to the
// same graph run in one process (rank 0 runs that reference itself), and rank 0's merged result
// must hold every task of the graph. So must data parallelism (dp=2 and dp=N, ring and
// hierarchical all-reduces), whose losses one process sums in the order its replicas end (the
// losses then agree to 1e-12). Every schedule on lenet5 also runs over a transport that sends the
// tensors beside the messages' bytes (SpanTransport), as the CUDA executor's NCCL transport sends
// GPU memory. Prints one line per configuration and "N passed, M failed"; every rank exits 1 when
// any failed.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../schedule_test_helpers.hpp"
#include "../synthetic_data.hpp"
#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"

using namespace pipetwin;

namespace {

// The tensors of a transfer's message travel beside its bytes, as NCCL sends GPU memory: each span
// is a blocking MPI message on a communicator of its own, tagged with the task, which the
// receiving rank's listener takes while it unpacks (RankMessage::out_of_band). A sender waits
// for its receiver, as an NCCL send does.
class SpanTransport final : public RankTransport {
 public:
  explicit SpanTransport(RankTransport& bytes) : bytes_(bytes) { MPI_Comm_dup(MPI_COMM_WORLD, &spans_comm_); }
  ~SpanTransport() override { MPI_Comm_free(&spans_comm_); }
  SpanTransport(const SpanTransport&) = delete;
  SpanTransport& operator=(const SpanTransport&) = delete;

  std::int32_t rank() const override { return bytes_.rank(); }
  std::int32_t ranks() const override { return bytes_.ranks(); }
  void send(std::int32_t to, std::int32_t task, const std::vector<unsigned char>& bytes) override { bytes_.send(to, task, bytes); }
  void post(std::int32_t to, std::int32_t task, std::vector<unsigned char> bytes) override { bytes_.post(to, task, std::move(bytes)); }
  bool carries_spans() const override { return true; }
  void post_with_spans(std::int32_t to, std::int32_t task, std::vector<unsigned char> bytes,
                       const std::vector<MessageSpan>& spans) override {
    std::lock_guard<std::mutex> lock(send_mutex_);  // the spans to a rank in the order of the messages
    bytes_.post(to, task, std::move(bytes));
    for (const MessageSpan& span : spans) {
      MPI_Send(span.data, static_cast<int>(span.bytes), MPI_BYTE, to, task, spans_comm_);
      ++spans_sent_;
    }
  }
  bool posting() override { return bytes_.posting(); }
  void flush(double wait_s) override { bytes_.flush(wait_s); }
  bool receive(RankMessage& message, double wait_s) override {
    if (!bytes_.receive(message, wait_s)) return false;
    const int from = message.from_rank, task = message.task;
    message.out_of_band = [this, from, task](void* into, std::int64_t bytes) {
      MPI_Status status;
      MPI_Recv(into, static_cast<int>(bytes), MPI_BYTE, from, task, spans_comm_, &status);
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (count != bytes) throw Error("a span of " + std::to_string(count) + " bytes came where " + std::to_string(bytes) + " were read");
    };
    return true;
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override { return bytes_.gather(bytes); }
  void barrier() override { bytes_.barrier(); }
  void barrier_within(double wait_s) override { bytes_.barrier_within(wait_s); }
  std::int64_t spans_sent() const { return spans_sent_; }

 private:
  RankTransport& bytes_;
  MPI_Comm spans_comm_ = MPI_COMM_NULL;
  std::mutex send_mutex_;
  std::atomic<std::int64_t> spans_sent_{0};
};

bool bit_equal(const std::vector<HostWeights>& a, const std::vector<HostWeights>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t l = 0; l < a.size(); ++l) {
    if (a[l].size() != b[l].size() ||
        std::memcmp(a[l].data(), b[l].data(), sizeof(float) * static_cast<std::size_t>(a[l].size())) != 0) {
      return false;
    }
  }
  return true;
}

// One configuration on every rank; on rank 0, "" when it passed, else what differed.
std::string check(const GraphConfig& config, mpi::MpiSession& session, RankTransport& transport) {
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const Dataset data = test::synthetic_data_for(request.network);
  const BatchSampler sampler = graph_sampler(data, graph, request.network, 7);
  TrainingOptions options;
  options.learning_rate = 0.05;
  Distribution distribution;
  distribution.transport = &transport;
  distribution.message_timeout_s = 60;
  options.distribution = &distribution;
  const TrainingRun across = cpu::run_cpu(graph, request.network, sampler, options);
  if (session.rank() != 0) return "";
  options.distribution = nullptr;
  const TrainingRun alone = cpu::run_cpu(graph, request.network, sampler, options);
  if (!bit_equal(across.final_weights, alone.final_weights)) return "final weights differ from one process's";
  if (across.minibatch_loss.size() != alone.minibatch_loss.size()) return "a loss is missing";
  for (std::size_t k = 0; k < alone.minibatch_loss.size(); ++k) {
    const double a = across.minibatch_loss[k], b = alone.minibatch_loss[k];
    if (graph.collectives.empty() ? a != b : !(std::fabs(a - b) <= 1e-12 * std::fabs(b))) return "losses differ from one process's";
  }
  if (across.result.tasks.size() != graph.tasks.size()) return "the merged result lacks tasks";
  for (const auto& t : across.result.tasks) {
    if (t.end_cycles < t.start_cycles) return "a task ends before it starts";
  }
  return "";
}

// Runs `config` on every rank and counts it on rank 0; a configuration no rank can build is skipped.
void run_case(GraphConfig config, const std::string& label, mpi::MpiSession& session, int& passed, int& failed,
              RankTransport* transport = nullptr) {
  try {
    config = test::with_schedule_file(config);
    make_graph(config);  // every rank builds it, or none does
  } catch (const Error&) {
    return;  // more stages than the network has cut points, asynchronous weights with dp, ...
  }
  if (config.processors < session.ranks()) return;
  std::string outcome;
  try {
    outcome = check(config, session, transport != nullptr ? *transport : session.transport());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s: %s\n", session.rank(), label.c_str(), e.what());
    session.abort_job(1);
  }
  if (session.rank() != 0) return;
  (outcome.empty() ? passed : failed) += 1;
  std::printf("%s on %d ranks: %s\n", label.c_str(), session.ranks(), outcome.empty() ? "bit-equal to one process" : outcome.c_str());
  std::fflush(stdout);
}

// A case every rank checks for itself: each prints what went wrong on it (`outcome`, empty when
// nothing did), after a barrier; rank 0 counts the case passed when it held on every rank.
void tally_ranks(mpi::MpiSession& session, const char* label, const std::string& outcome, const char* held, int& passed,
                 int& failed) {
  session.transport().barrier();
  if (!outcome.empty()) std::printf("%s, rank %d: %s\n", label, session.rank(), outcome.c_str());
  int wrong = outcome.empty() ? 0 : 1, ranks_wrong = 0;
  MPI_Allreduce(&wrong, &ranks_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (session.rank() != 0) return;
  if (ranks_wrong == 0) std::printf("%s: %s\n", label, held);
  (ranks_wrong == 0 ? passed : failed) += 1;
}

}  // namespace

int main() {
  mpi::MpiSession session;
  const std::int32_t ranks = session.ranks();
  int passed = 0, failed = 0;
  // A barrier with a deadline: on time, every rank passes it. With rank 1 two seconds late, rank 0
  // gives up after half a second with an error that says so, and the others pass it once rank 1
  // comes (MPI matches collectives in order: rank 0's next barrier moves its abandoned one on).
  if (ranks >= 2) {
    session.transport().barrier_within(30);
    std::string outcome = "no error after 0.5 s with rank 1 late";
    if (session.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    try {
      session.transport().barrier_within(session.rank() == 0 ? 0.5 : 30);
      if (session.rank() != 0) outcome.clear();
    } catch (const Error& e) {
      const std::string what = e.what();
      outcome = session.rank() == 0 && what.find("rank 0 waited 0.5 s at a barrier") != std::string::npos ? "" : what;
    }
    tally_ranks(session, "barrier with a deadline", outcome, "rank 0 gave up on a late rank, the others passed", passed, failed);
  }
  // A gather with a deadline: on time, rank 0 gets every rank's bytes in rank order. With rank 1
  // two seconds late, rank 0 gives up after half a second with an error that says so; it then
  // takes part in the gather the others go on to, so that the collectives stay matched.
  if (ranks >= 2) {
    const std::vector<unsigned char> mine{static_cast<unsigned char>(session.rank()), 7};
    std::string outcome;
    const auto all = session.transport().gather_within(mine, 30);
    if (session.rank() == 0) {
      for (std::int32_t r = 0; r < ranks && outcome.empty(); ++r) {
        if (all.at(static_cast<std::size_t>(r)) != std::vector<unsigned char>{static_cast<unsigned char>(r), 7}) {
          outcome = "on time: rank " + std::to_string(r) + "'s bytes are not its own";
        }
      }
    }
    if (session.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    try {
      session.transport().gather_within(mine, session.rank() == 0 ? 0.5 : 30);
      if (session.rank() == 0) outcome = "no error after 0.5 s with rank 1 late";
    } catch (const Error& e) {
      const std::string what = e.what();
      if (session.rank() != 0 || what.find("rank 0 waited 0.5 s at a barrier") == std::string::npos) outcome = what;
      session.transport().gather(mine);  // the gather the other ranks went on to
    }
    tally_ranks(session, "gather with a deadline", outcome, "every rank's bytes on time; rank 0 gave up on a late rank", passed,
                failed);
  }
  for (const std::string model : {"lenet5", "resnet8"}) {
    for (const auto& schedule : schedule_names()) {
      const auto& specs = find_schedule(schedule).params;
      const bool can_recompute = std::any_of(specs.begin(), specs.end(), [](const ParamSpec& p) { return p.name == "recompute"; });
      for (const int variant : {0, 1, 2}) {  // one processor per rank, two, and one with recomputation
        if (variant == 2 && !can_recompute) continue;
        const int per_rank = variant == 1 ? 2 : 1;
        GraphConfig config = graph_config(model, schedule, "cpu-core", ranks * per_rank, 2, 3);
        config.params.push_back("model.batch=4");
        if (variant == 2) config.params.push_back("recompute=full");
        char label[128];
        std::snprintf(label, sizeof(label), "%-8s %-18s P=%d%s", model.c_str(), schedule.c_str(), config.processors,
                      variant == 2 ? " recompute=full" : "");
        run_case(config, label, session, passed, failed);
      }
    }
  }
  // Tensors beside the messages: every schedule on lenet5, one processor per rank. Some must have
  // travelled so (counted over the ranks).
  {
    SpanTransport spans(session.transport());
    for (const auto& schedule : schedule_names()) {
      GraphConfig config = graph_config("lenet5", schedule, "cpu-core", ranks, 2, 3);
      config.params.push_back("model.batch=4");
      run_case(config, "lenet5   " + schedule + " P=" + std::to_string(ranks) + ", tensors beside the messages", session,
               passed, failed, &spans);
    }
    long long sent = spans.spans_sent(), total = 0;
    MPI_Allreduce(&sent, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (session.rank() == 0) {
      std::printf("tensors sent beside messages: %lld\n", total);
      if (total == 0) ++failed;
    }
  }
  // Data parallelism: two replicas of a pipeline of N stages; N replicas of one stage (a ring over
  // every rank); and four replicas on two nodes of two (a hierarchical all-reduce).
  for (const std::string model : {"lenet5", "resnet8"}) {
    for (const std::string schedule : {"gpipe", "1f1b", "zb-h1"}) {
      const std::vector<std::pair<int, std::vector<std::string>>> setups = {
          {2 * ranks, {"dp=2"}},
          {ranks, {"dp=" + std::to_string(ranks)}},
          {4, {"dp=4", "allreduce=hierarchical", "processors_per_node=2"}}};
      for (const auto& [processors, params] : setups) {
        GraphConfig config = graph_config(model, schedule, "cpu-core", processors, 2, 3);
        config.params = {"model.batch=4"};
        std::string label = model + " " + schedule + " P=" + std::to_string(processors);
        for (const auto& p : params) {
          config.params.push_back(p);
          label += " " + p;
        }
        run_case(config, label, session, passed, failed);
      }
    }
  }
  int failures = failed;
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (session.rank() == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failures == 0 && (session.rank() != 0 || passed > 0) ? 0 : 1;
}
