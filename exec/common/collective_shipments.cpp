// Which gradient sums each all-reduce step carries between ranks (collective_shipments.hpp).
#include "collective_shipments.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "pipetwin/exec/ranks.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {
namespace {

// What one step of an all-reduce knows when it starts, of the replicas' gradient sums (named by
// their updates). A sum it may use is complete and on its rank: its update's rank, or arrived.
struct StepKnowledge {
  std::set<std::int32_t> complete;                      // the sums whose last producers it follows
  std::set<std::int32_t> arrived;                       // other ranks' sums that have reached its rank
  std::map<std::int32_t, std::set<std::int32_t>> sent;  // rank -> sums its rank's steps up to it sent there
};

std::string rank_text(std::int32_t rank) { return "rank " + std::to_string(rank); }

}  // namespace

std::map<std::int32_t, std::vector<std::int32_t>> plan_collective_shipments(const TaskGraph& graph, const GraphFlow& flow,
                                                                           const std::vector<std::int32_t>& task_rank,
                                                                           std::int32_t ranks) {
  const std::int32_t processors = graph.processor_count();
  const auto rank_of = [&](std::int32_t id) { return task_rank[static_cast<std::size_t>(id)]; };
  std::map<std::int32_t, std::vector<std::int32_t>> carried;  // the answer
  std::map<std::int32_t, StepKnowledge> knows;                // per step task
  std::map<std::int32_t, std::int32_t> receiver;              // per step task: its receiving rank
  for (const auto& t : graph.tasks) {  // a step's steps before it have lower ids (collectives.cpp)
    if (t.collective < 0) continue;
    const auto updates = flow.collective_updates.find(t.collective);
    if (updates == flow.collective_updates.end()) {
      throw Error("internal: " + describe_task(graph, t) + " belongs to an all-reduce that no update waits for");
    }
    const std::int32_t here = rank_of(t.id);
    StepKnowledge k;
    for (const auto& d : t.deps) {
      const Task& source = graph.tasks[static_cast<std::size_t>(d.task)];
      if (source.collective == t.collective) {
        const auto before = knows.find(d.task);
        if (before == knows.end()) throw Error("internal: " + describe_task(graph, t) + " waits for a later step");
        k.complete.insert(before->second.complete.begin(), before->second.complete.end());
        if (rank_of(d.task) == here) {  // what had reached this rank and been sent then still holds
          k.arrived.insert(before->second.arrived.begin(), before->second.arrived.end());
          for (const auto& [rank, sums] : before->second.sent) k.sent[rank].insert(sums.begin(), sums.end());
        } else if (receiver.at(d.task) == here) {  // that step's message, received before this step starts
          const auto brought = carried.find(d.task);
          if (brought != carried.end()) k.arrived.insert(brought->second.begin(), brought->second.end());
        }
        continue;
      }
      const std::int32_t u = is_link_task(source) ? -1 : flow.accumulate_into[static_cast<std::size_t>(d.task)];
      if (d.carries != Carries::weight_gradient || u < 0) continue;
      if (std::find(updates->second.begin(), updates->second.end(), u) == updates->second.end()) continue;
      if (rank_of(u) != here) {
        throw Error(graph.collectives[static_cast<std::size_t>(t.collective)].name + " cannot run across processes: " +
                    describe_task(graph, t) + " on " + rank_text(here) + " starts from the gradients of " +
                    describe_task(graph, graph.tasks[static_cast<std::size_t>(u)]) + " on " + rank_text(rank_of(u)));
      }
      k.complete.insert(u);  // the step waits for the sum's last producer
    }
    const std::int32_t to = rank_of_processor(graph.links.at(static_cast<std::size_t>(t.resource)).dst, processors, ranks);
    receiver[t.id] = to;
    if (to != here) {
      std::vector<std::int32_t> sums;
      for (const auto u : updates->second) {  // rank order
        const bool usable = k.complete.count(u) && (rank_of(u) == here || k.arrived.count(u));
        if (usable && rank_of(u) != to && !k.sent[to].count(u)) sums.push_back(u);
      }
      k.sent[to].insert(sums.begin(), sums.end());
      if (!sums.empty()) carried[t.id] = std::move(sums);
    }
    knows[t.id] = std::move(k);
  }

  // Every update must have every other replica's sum when it runs, and its own replica's sum must
  // not be taken (by its update) before the steps that carry it away have run.
  std::map<std::int32_t, std::vector<std::int32_t>> carrying;  // collective -> its steps that carry sums
  for (const auto& [step, sums] : carried) carrying[graph.tasks[static_cast<std::size_t>(step)].collective].push_back(step);
  for (const auto& [collective, updates] : flow.collective_updates) {
    const std::string& name = graph.collectives.at(static_cast<std::size_t>(collective)).name;
    for (const auto u : updates) {
      const Task& update = graph.tasks[static_cast<std::size_t>(u)];
      const std::int32_t here = rank_of(u);
      std::set<std::int32_t> complete{u}, arrived;
      std::set<std::int32_t> before;  // the all-reduce's steps it follows
      std::vector<std::int32_t> open;
      for (const auto& d : update.deps) {
        if (graph.tasks[static_cast<std::size_t>(d.task)].collective != collective) continue;
        open.push_back(d.task);
        const StepKnowledge& k = knows.at(d.task);
        complete.insert(k.complete.begin(), k.complete.end());
        if (rank_of(d.task) == here) {
          arrived.insert(k.arrived.begin(), k.arrived.end());
        } else if (receiver.at(d.task) == here && carried.count(d.task)) {
          arrived.insert(carried.at(d.task).begin(), carried.at(d.task).end());
        }
      }
      for (const auto v : updates) {
        if (!complete.count(v) || (rank_of(v) != here && !arrived.count(v))) {
          throw Error(name + " cannot run across processes: " + describe_task(graph, update) + " on " + rank_text(here) +
                      " could run before the gradient sum of " + describe_task(graph, graph.tasks[static_cast<std::size_t>(v)]) +
                      " on " + rank_text(rank_of(v)) + " reached it (use allreduce=ring)");
        }
      }
      while (!open.empty()) {
        const std::int32_t s = open.back();
        open.pop_back();
        if (!before.insert(s).second) continue;
        for (const auto& d : graph.tasks[static_cast<std::size_t>(s)].deps) {
          if (graph.tasks[static_cast<std::size_t>(d.task)].collective == collective) open.push_back(d.task);
        }
      }
      for (const auto step : carrying[collective]) {
        if (rank_of(step) != here) continue;
        const auto& sums = carried.at(step);
        if (std::find(sums.begin(), sums.end(), u) != sums.end() && !before.count(step)) {
          throw Error(name + " cannot run across processes: " + describe_task(graph, update) + " could take its replica's "
                      "gradient sum before " + describe_task(graph, graph.tasks[static_cast<std::size_t>(step)]) +
                      " carries it to " + rank_text(receiver.at(step)));
        }
      }
    }
  }
  return carried;
}

}  // namespace pipetwin::exec
