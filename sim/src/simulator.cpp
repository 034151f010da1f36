// One simulation run: a fresh SystemC context at the graph's clock, the module hierarchy
// elaborated from the graph (platform.hpp), the kernel run until nothing is left to happen, the
// task times collected.
#include "pipetwin/sim/simulator.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>

#include <systemc>

#include "kernel_session.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/sim/accelerator.hpp"
#include "platform.hpp"

// libsystemc.so's own main() calls sc_main(); pipetwin's programs bring their own main() and
// start the kernel with sc_start(), so this definition only satisfies the linker.
int sc_main(int, char*[]) { return 1; }

namespace pipetwin {
namespace {

std::string deadlock_message(const TaskGraph& g, const sim::TaskBoard& board,
                             const std::vector<std::unique_ptr<sim::ProcessorModule>>& processors) {
  std::string message = "deadlock: " + std::to_string(g.tasks.size() - board.finished()) + " of " +
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
      if (!board.done(dep.task)) waits += (waits.empty() ? "" : ", ") + describe_task(g, g.tasks[dep.task]);
    }
    if (!waits.empty()) message += ", which waits for " + waits;
  }
  return message;
}

// The network a graph names, built again from its record (graph_network).
Network network_named_by(const TaskGraph& g) {
  try {
    return graph_network(g);
  } catch (const Error& error) {
    throw Error("accelerator '" + g.accelerator + "' computes task cycles from the network's layers, and the network "
                "this graph names (" + g.model + ") cannot be built again: " + error.what());
  }
}

// Up to how many cycles a run with the fixed model and fluid links can last: every task's cost and
// memory traffic one after another (sharing a medium or a memory system conserves the work served,
// so some task progresses at full rate whenever the run has not ended), each after the costliest
// wait (the wait loss's largest charge).
std::int64_t longest_cycles(const TaskGraph& g) {
  double most_per_byte = 0;
  for (const auto& point : g.wait_loss) most_per_byte = std::max(most_per_byte, point.extra_cycles_per_byte);
  double total = 0;
  for (const auto& t : g.tasks) {
    total += static_cast<double>(t.cost_cycles) + static_cast<double>(t.memory_cycles) +
             most_per_byte * static_cast<double>(t.wait_exposed_bytes) + 1;
  }
  return total >= 9e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(total);
}

// SystemC opens the VCD file itself (a device such as /dev/null is written in place, never
// replaced); a missing folder or a directory is our error to report.
void check_vcd_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  if (file.extension() != ".vcd") throw Error("the VCD trace's file name must end in .vcd, got " + path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code error;
  if (!fs::is_directory(folder, error)) throw Error("cannot write the VCD trace " + path + ": no folder " + folder.string());
  if (fs::is_directory(file, error)) throw Error("cannot write the VCD trace " + path + ": it is a folder");
}

}  // namespace

std::vector<TaskTiming> simulate_times(const TaskGraph& g, const SimOptions& options) {
  const auto problems = structural_problems(g);  // a deadlock is ours to find, not the validator's
  if (!problems.empty()) throw Error("cannot simulate: " + problems.front());
  sim::PacketSettings packets;
  if (options.packet_links) {
    if (options.packet_bytes < 1) throw Error("packet links: the packet size must be at least 1 byte");
    if (options.packet_credits < 0) throw Error("packet links: credits must be 0 (automatic) or more");
    packets.packet_bytes = options.packet_bytes;
    packets.credits = options.packet_credits;
  }
  const sim::AcceleratorRegistry builtin;
  const sim::AcceleratorRegistry& registry = options.accelerators ? *options.accelerators : builtin;
  registry.check(g.accelerator);
  Network rebuilt;
  const Network* network = options.network;
  if (network == nullptr && g.accelerator != "fixed") {
    rebuilt = network_named_by(g);
    network = &rebuilt;
  }
  const Network empty;
  // Accelerator models and packet links (flow control, one packet per round trip) may make tasks
  // longer than their graph costs: those runs get a clock that reaches 2^56 cycles, and a task
  // that would end beyond it is an error (processor_module.cpp, link_medium.cpp).
  const bool costs_bound_the_run = g.accelerator == "fixed" && !options.packet_links;
  sim::KernelSession session(g.clock_hz, costs_bound_the_run ? longest_cycles(g) : std::int64_t{1} << 56);
  sim::Platform platform("platform", g, session, registry, network ? *network : empty,
                         options.packet_links ? &packets : nullptr);
  sc_core::sc_trace_file* vcd = nullptr;
  if (!options.vcd_path.empty()) {
    check_vcd_path(options.vcd_path);
    std::string stem = options.vcd_path;  // SystemC appends ".vcd"
    stem.resize(stem.size() - 4);
    vcd = sc_core::sc_create_vcd_trace_file(stem.c_str());
    // VCD counts time in the run's resolution (a power of ten, as VCD requires): one clock
    // period is period_units() of it.
    vcd->set_time_unit(sc_core::sc_get_time_resolution().to_seconds(), sc_core::SC_SEC);
    platform.add_traces(vcd);
  }
  try {
    sc_core::sc_start();
  } catch (const sc_core::sc_report& report) {
    if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
    throw Error(std::string("SystemC: ") + report.what());
  }
  if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
  if (platform.board().error()) std::rethrow_exception(platform.board().error());
  if (platform.board().finished() != g.tasks.size()) {
    throw Error(deadlock_message(g, platform.board(), platform.processors()));
  }
  return platform.board().take_times();
}

Result simulate(const TaskGraph& graph, const SimOptions& options) {
  return summarize(graph, simulate_times(graph, options), "systemc", options.record_memory_timeline);
}

Result SystemcEngine::run(const TaskGraph& graph, const EngineOptions& options) {
  return summarize_replay(graph, simulate_times(graph, options_), name(), options);
}

}  // namespace pipetwin
