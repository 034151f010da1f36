// Benchmark: simulated tasks per wall-second of the SystemC simulator (links and memory tracking
// on) against the analytic evaluator, and with packet-level links, on pipelines of resnet110 on h100
// profiles. Prints figures;
// asserts nothing (speed targets are checked by reading them, not by tests).
#include <chrono>
#include <cstdio>
#include <string>

#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/sim/simulator.hpp"

using namespace pipetwin;

namespace {

template <typename Run>
double tasks_per_second(const TaskGraph& graph, Run run) {
  using clock = std::chrono::steady_clock;
  const auto begin = clock::now();
  std::size_t runs = 0;
  double seconds = 0;
  while (seconds < 1.5 || runs < 3) {
    run(graph);
    ++runs;
    seconds = std::chrono::duration<double>(clock::now() - begin).count();
  }
  return static_cast<double>(graph.tasks.size() * runs) / seconds;
}

}  // namespace

int main() {
  std::printf("%-36s %8s %16s %16s %16s %16s %12s\n", "graph", "tasks", "systemc times/s", "systemc full/s",
              "analytic full/s", "packets times/s", "packets/s");
  for (const auto& [schedule, processors] : {std::pair<std::string, int>{"1f1b", 8}, {"1f1b", 32},
                                             {"pipedream", 16}, {"gpipe", 56}}) {
    GraphConfig config;
    config.model = "resnet110";
    config.schedule = schedule;
    config.hardware = "h100";
    config.processors = processors;
    config.microbatches = 64;
    config.minibatches = 2;
    const TaskGraph graph = make_graph(config);
    // Engine only; engine plus the summary (idle attribution, memory timeline, link use).
    const double engine = tasks_per_second(graph, [](const TaskGraph& g) { simulate_times(g); });
    const double full = tasks_per_second(graph, [](const TaskGraph& g) {
      SimOptions options;
      options.record_memory_timeline = true;
      simulate(g, options);
    });
    const double analytic = tasks_per_second(graph, [](const TaskGraph& g) { evaluate(g, true); });
    // Packet-level links (4 KiB packets): tasks per second, and packets per second (each
    // transfer is ceil(bytes / 4096) packets).
    SimOptions packet_options;
    packet_options.packet_links = true;
    packet_options.packet_bytes = 4096;
    const double packets_engine =
        tasks_per_second(graph, [&packet_options](const TaskGraph& g) { simulate_times(g, packet_options); });
    double packets_per_run = 0;
    for (const auto& t : graph.tasks) {
      if (t.placement == Placement::link) packets_per_run += t.bytes > 0 ? static_cast<double>((t.bytes + 4095) / 4096) : 1.0;
    }
    const double packets_per_second = packets_engine / static_cast<double>(graph.tasks.size()) * packets_per_run;
    const std::string name = "resnet110 " + schedule + " P=" + std::to_string(processors) + " M=64 K=2";
    std::printf("%-36s %8zu %16.3g %16.3g %16.3g %16.3g %12.3g\n", name.c_str(), graph.tasks.size(), engine, full, analytic,
                packets_engine, packets_per_second);
  }
  return 0;
}
