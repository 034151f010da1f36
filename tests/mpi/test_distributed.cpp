// Runs under `mpirun -np N` (tests/CMakeLists.txt): every schedule on lenet5 and resnet8, trained
// across the N ranks (one processor per rank, and two per rank where the schedule allows), must
// (and with recomputation where the schedule has it) end with weights and losses bit-equal to the same graph run in one process (rank 0 runs that
// reference itself), and rank 0's merged result must hold every task of the graph. Prints one
// line per configuration and "N passed, M failed"; every rank exits 1 when any failed.
#include <mpi.h>

#include <algorithm>
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
  const BatchSampler sampler(data, request.network.batch, graph.microbatches, graph.minibatches, 7);
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
  if (across.minibatch_loss != alone.minibatch_loss) return "losses differ from one process's";
  if (across.result.tasks.size() != graph.tasks.size()) return "the merged result lacks tasks";
  for (const auto& t : across.result.tasks) {
    if (t.end_cycles < t.start_cycles) return "a task ends before it starts";
  }
  return "";
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
        std::string outcome;
        try {
          config = test::with_schedule_file(config);
          make_graph(config);  // every rank builds it, or none does
        } catch (const Error&) {
          continue;  // more stages than the network has cut points, ...
        }
        if (config.processors < ranks) continue;
        try {
          outcome = check(config, session);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "rank %d: %s %s P=%d: %s\n", session.rank(), model.c_str(), schedule.c_str(),
                       config.processors, e.what());
          session.abort_job(1);
        }
        if (session.rank() != 0) continue;
        (outcome.empty() ? passed : failed) += 1;
        std::printf("%-8s %-18s P=%d%s on %d ranks: %s\n", model.c_str(), schedule.c_str(), config.processors,
                    variant == 2 ? " recompute=full" : "", ranks,
                    outcome.empty() ? "bit-equal to one process" : outcome.c_str());
        std::fflush(stdout);
      }
    }
  }
  int failures = failed;
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (session.rank() == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failures == 0 && (session.rank() != 0 || passed > 0) ? 0 : 1;
}
