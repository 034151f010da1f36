// Runs under `mpirun -np N` (tests/CMakeLists.txt): every schedule on lenet5 and resnet8, trained
// across the N ranks (one processor per rank, two per rank where the schedule allows, and with
// recomputation where the schedule has it), must end with weights and losses bit-equal to the
// same graph run in one process (rank 0 runs that reference itself), and rank 0's merged result
// must hold every task of the graph. So must data parallelism (dp=2 and dp=N, ring and
// hierarchical all-reduces), whose losses one process sums in the order its replicas end (the
// losses then agree to 1e-12). Prints one line per configuration and "N passed, M failed"; every
// rank exits 1 when any failed.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
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
std::string check(const GraphConfig& config, mpi::MpiSession& session) {
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const Dataset data = test::synthetic_data_for(request.network);
  const BatchSampler sampler = graph_sampler(data, graph, request.network, 7);
  TrainingOptions options;
  options.learning_rate = 0.05;
  Distribution distribution;
  distribution.transport = &session.transport();
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
void run_case(GraphConfig config, const std::string& label, mpi::MpiSession& session, int& passed, int& failed) {
  try {
    config = test::with_schedule_file(config);
    make_graph(config);  // every rank builds it, or none does
  } catch (const Error&) {
    return;  // more stages than the network has cut points, asynchronous weights with dp, ...
  }
  if (config.processors < session.ranks()) return;
  std::string outcome;
  try {
    outcome = check(config, session);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s: %s\n", session.rank(), label.c_str(), e.what());
    session.abort_job(1);
  }
  if (session.rank() != 0) return;
  (outcome.empty() ? passed : failed) += 1;
  std::printf("%s on %d ranks: %s\n", label.c_str(), session.ranks(), outcome.empty() ? "bit-equal to one process" : outcome.c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  mpi::MpiSession session;
  const std::int32_t ranks = session.ranks();
  int passed = 0, failed = 0;
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
