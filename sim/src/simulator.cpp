// One simulation run in SystemC's process-global kernel: a model per processor and per link
// medium (serving each of its links by the link's policy), each on a pooled worker process; run
// until nothing is left to happen; collect the task times.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "pipetwin/sim/simulator.hpp"

#include <map>
#include <memory>

#include <systemc>

#include "link_medium.hpp"
#include "memory_system.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "processor_model.hpp"

// libsystemc.so's own main() calls sc_main(); pipetwin's programs bring their own main() and
// start the kernel with sc_start(), so this definition only satisfies the linker.
int sc_main(int, char*[]) { return 1; }

namespace pipetwin {
namespace {

std::string deadlock_message(const TaskGraph& g, const sim::RunState& run,
                             const std::vector<std::unique_ptr<sim::ProcessorModel>>& processors) {
  std::string message = "deadlock: " + std::to_string(g.tasks.size() - run.finished()) + " of " +
                        std::to_string(g.tasks.size()) + " tasks never ran";
  int listed = 0;
  for (const auto& processor : processors) {
    const std::int32_t blocked = processor->blocked_task();
    if (blocked < 0 || listed == 8) continue;
    const Task& t = g.tasks[blocked];
    message += std::string(listed++ ? "; " : ": ") + g.processors[t.resource].name +
               " is stuck before " + describe_task(g, t);
    std::string waits;
    for (const auto& dep : t.deps) {
      if (!run.done(dep.task)) waits += (waits.empty() ? "" : ", ") + describe_task(g, g.tasks[dep.task]);
    }
    if (!waits.empty()) message += ", which waits for " + waits;
  }
  return message;
}

}  // namespace

std::vector<TaskTiming> simulate_times(const TaskGraph& g) {
  const auto problems = structural_problems(g);  // a deadlock is ours to find, not the validator's
  if (!problems.empty()) throw Error("cannot simulate: " + problems.front());
  // SystemC's clock never goes back within a process: this run starts where the last one ended,
  // and can last at most the sum of its tasks' costs (below kMaxTotalCycles).
  std::int64_t longest = 0;
  for (const auto& t : g.tasks) longest += t.cost_cycles;
  const sc_dt::uint64 now = sc_core::sc_time_stamp().value();
  if (now > ~sc_dt::uint64{0} - static_cast<sc_dt::uint64>(longest)) {
    throw Error("cannot simulate: SystemC's clock in this process has run " + std::to_string(now) +
                " cycles over earlier runs and would overflow in this one (up to " + std::to_string(longest) +
                " cycles); run it in a new process, or use the analytic engine");
  }
  const auto queues = tasks_by_processor(g);
  sim::RunState run(g);
  sim::WorkerLease lease;  // declared before the models: they detach before it ends
  std::vector<std::unique_ptr<sim::ProcessorModel>> processors;
  std::vector<std::unique_ptr<sim::LinkMedium>> media;
  std::map<std::int32_t, std::unique_ptr<sim::MemorySystem>> memory_systems;
  std::vector<sim::ProcessorModel*> processor_of;
  std::vector<sim::LinkMedium*> medium_of_link;
  std::map<std::string, sim::LinkMedium*> shared;
  for (std::size_t p = 0; p < queues.size(); ++p) {
    const std::int32_t system = g.processors[p].memory_system;
    sim::MemorySystem* memory = nullptr;
    if (system >= 0) {
      auto& shared_memory = memory_systems[system];
      if (!shared_memory) shared_memory = std::make_unique<sim::MemorySystem>(run, lease);
      memory = shared_memory.get();
    }
    processors.push_back(std::make_unique<sim::ProcessorModel>(run, queues[p], memory, lease));
    processor_of.push_back(processors.back().get());
  }
  for (const auto& link : g.links) {
    sim::LinkMedium*& group = shared[link.shared_group];
    if (link.shared_group.empty() || group == nullptr) {
      media.push_back(std::make_unique<sim::LinkMedium>(run, lease));
      if (!link.shared_group.empty()) group = media.back().get();
      medium_of_link.push_back(media.back().get());
    } else {
      medium_of_link.push_back(group);
    }
  }
  const auto by_link = tasks_by_link(g);
  for (std::size_t k = 0; k < g.links.size(); ++k) {
    if (g.links[k].policy == LinkPolicy::in_order) medium_of_link[k]->serve_in_order(static_cast<std::int32_t>(k), by_link[k]);
  }
  run.bind(std::move(processor_of), std::move(medium_of_link));
  for (const auto& t : g.tasks) {  // transfers with nothing to wait for start at once
    if (t.placement == Placement::link && t.deps.empty()) run.medium_of_link(t.resource)->arrive(t.id);
  }
  sc_core::sc_start();
  if (run.finished() != g.tasks.size()) throw Error(deadlock_message(g, run, processors));
  return run.take_times();
}

Result simulate(const TaskGraph& graph, const SimOptions& options) {
  return summarize(graph, simulate_times(graph), "systemc", options.record_memory_timeline);
}

Result SystemcEngine::run(const TaskGraph& graph, const EngineOptions& options) {
  return summarize_replay(graph, simulate_times(graph), name(), options);
}

}  // namespace pipetwin
