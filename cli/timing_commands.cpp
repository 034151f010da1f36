// `pipetwin evaluate` (the analytic evaluator) and `pipetwin simulate` (the SystemC simulator):
// one or more processor counts as a table or JSON, or a graph file from `pipetwin schedule`.
// `simulate` also writes a Chrome trace. With --peak-phase, each count's steady step peak is also
// predicted over the phases its processors can take against each other (step_peak_over_phases).
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "executor_setup.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/step_peak_over_phases.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/sim/engines.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/views.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif
#include "table.hpp"
#include "output_option.hpp"

namespace pipetwin::cli {
namespace {

struct TimingOptions {
  std::string engine;
  GraphOptions graph;
  std::string graph_file;
  std::string trace_file;
  std::string vcd_file;  // simulate only
  bool packets = false;  // simulate only: packet-level links
  std::int64_t packet_bytes = 4096;
  std::int32_t credits = 0;
  bool json = false;
  bool task_times = false;
  bool per_processor = false;
  bool strict_memory = false;
  bool quiet = false;
  std::string peak_phase = "0";  // a fraction, or auto: the --calibration table's task spread
};

// --peak-phase as a fraction: auto takes the --calibration table's task spread.
double peak_phase_fraction(const TimingOptions& options) {
  if (options.peak_phase != "auto") return std::stod(options.peak_phase);
  const std::string& file = options.graph.config.calibration_file;
  if (file.empty()) {
    throw Error("--peak-phase auto takes the task spread of the --calibration table (from `pipetwin profile`); give "
                "--calibration, or a fraction");
  }
  const Calibration table = load_calibration(file);
  if (table.task_time_spread < 0) {
    throw Error("--peak-phase auto: " + file + " has no task spread (task_time_spread: tables profiled since "
                "2026-12-01 have one); profile again, or give a fraction");
  }
  return table.task_time_spread;
}

std::int64_t sum_of(const std::vector<std::int64_t>& values) {
  std::int64_t total = 0;
  for (const auto v : values) total += v;
  return total;
}

void print_per_processor(const Evaluated& e) {
  Table table({"processor", "stage layers", "busy_cycles", "utilization", "idle: data", "idle: link",
               "idle: none left", "peak_memory", "capacity"});
  for (int p = 0; p < e.graph.processor_count(); ++p) {
    // Layer ranges of the stages at home here (forwards elsewhere marked F@), adjacent ones merged.
    std::string layers;
    int first = -1, last = -2;
    auto flush = [&] {
      if (first >= 0) layers += (layers.empty() ? "" : ",") + fmt::format("{}-{}", first, last);
    };
    for (const auto& stage : e.graph.stages) {
      if (stage.processor == p && stage.first_layer == last + 1) {
        last = stage.last_layer;
      } else if (stage.processor == p) {
        flush();
        first = stage.first_layer;
        last = stage.last_layer;
      }
    }
    flush();
    for (const auto& stage : e.graph.stages) {
      if (stage.forward_processor == p) {
        layers += (layers.empty() ? "" : ",") + fmt::format("F@{}-{}", stage.first_layer, stage.last_layer);
      }
    }
    const IdleCycles& idle = e.result.idle_cycles[p];
    table.add_row({e.graph.processors[p].name, layers, std::to_string(e.result.busy_cycles[p]),
                   fmt::format("{:.3f}", e.result.utilization[p]), std::to_string(idle.waiting_on_data),
                   std::to_string(idle.waiting_on_link), std::to_string(idle.nothing_to_do),
                   human_bytes(e.result.peak_memory_bytes[p]),
                   human_bytes(e.graph.processors[p].memory_capacity_bytes)});
  }
  table.print(std::cout);
}

// "skipped P = 6-9: <why P = 6 could not be built>", one line for each run of counts in a row
// that failed alike (the reason names the first count; the rest fail the same way).
void print_skipped(const std::vector<std::pair<int, std::string>>& skipped, std::ostream& out) {
  auto same_kind = [](const std::string& a, const std::string& b) {  // alike but for the count in it
    auto letters = [](const std::string& text) {
      std::string kept;
      for (const char c : text) kept += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
      return kept;
    };
    return letters(a) == letters(b);
  };
  for (std::size_t i = 0; i < skipped.size();) {
    std::size_t j = i + 1;
    while (j < skipped.size() && skipped[j].first == skipped[j - 1].first + 1 &&
           same_kind(skipped[j].second, skipped[i].second)) {
      ++j;
    }
    const int low = skipped[i].first, high = skipped[j - 1].first;
    out << "skipped P = " << (low == high ? std::to_string(low) : std::to_string(low) + "-" + std::to_string(high))
        << ": " << skipped[i].second << "\n";
    i = j;
  }
}

void run(const TimingOptions& options) {
  const double phase = peak_phase_fraction(options);  // read first: a bad table fails before any run
  std::vector<Evaluated> runs;
  std::vector<std::pair<int, std::string>> skipped;  // counts of --procs that could not be built, and why
  double baseline_iteration = 0;
  std::string baseline_schedule = "same schedule";
  const bool tracing = !options.trace_file.empty();
  // The engine the runs use: by name, or the simulator with its packet links and VCD trace.
  std::unique_ptr<Engine> engine = make_engine(options.engine);
#ifdef PIPETWIN_HAVE_SYSTEMC
  if (options.packets || !options.vcd_file.empty()) {
    SimOptions sim;
    sim.packet_links = options.packets;
    sim.packet_bytes = options.packet_bytes;
    sim.packet_credits = options.credits;
    sim.vcd_path = options.vcd_file;
    engine = std::make_unique<SystemcEngine>(sim);
  }
#endif
  if (!options.graph_file.empty()) {
    Evaluated e{load_graph(options.graph_file), {}};
    validate_or_throw(e.graph);
    e.result = engine->run(e.graph, EngineOptions{tracing, {}});
    runs.push_back(std::move(e));
  } else {
    const auto counts = parse_procs(options.graph.procs);
    if (tracing && counts.size() != 1) throw Error("--trace needs a single processor count in --procs");
    if (!options.vcd_file.empty() && counts.size() != 1) throw Error("--vcd needs a single processor count in --procs");
    GraphConfig config = options.graph.config;
    // Several counts of a large graph take minutes (LayerPipe on resnet362, 256 microbatches: 6 s a count).
    ProgressBar bar(options.engine == "analytic" ? "evaluate" : "simulate", counts.size(),
                    options.quiet || counts.size() == 1);
    for (const int p : counts) {
      bar.update(runs.size() + skipped.size());
      config.processors = p;
      try {
        runs.push_back(build_and_run(*engine, config, true, tracing));
      } catch (const Error& e) {
        // One count of several that cannot be built (lenet5 has at most 5 stages; the default
        // --procs is 1-9): the others still run, and the table says which were skipped and why.
        if (counts.size() == 1) throw;
        skipped.push_back({p, e.what()});
        continue;
      }
      if (p == 1) baseline_iteration = runs.back().result.iteration_cycles;
    }
    bar.update(counts.size());
    if (runs.empty()) throw Error(skipped.front().second);  // every count failed: the first one's reason
    if (graph_replicas(runs.front().graph) > 1) baseline_iteration = 0;  // P = 1 was not one replica
    if (baseline_iteration == 0 && !options.json) {
      config = single_replica(config);
      config.processors = 1;
      try {
        baseline_iteration = build_and_run(options.engine, config, false).result.iteration_cycles;
      } catch (const Error&) {  // a schedule that needs several processors (pipefb)
        config.schedule = "sequential";
        baseline_schedule = "sequential";
        baseline_iteration =
            build_and_run(options.engine, without_other_schedules_params(config), false).result.iteration_cycles;
      }
    }
  }
  // Each count's step peak over its processors' phases (2P more predictions a count).
  std::vector<std::int64_t> phased_step_peaks;
  if (phase > 0) {
    ProgressBar bar("step peaks over phases", runs.size(), options.quiet || runs.size() == 1);
    const auto predict = [&engine](const TaskGraph& graph) { return engine->run(graph, EngineOptions{false, {}}); };
    for (const auto& e : runs) {
      bar.update(phased_step_peaks.size());
      phased_step_peaks.push_back(
          step_peak_over_phases(e.graph, predict, max_peak(e.result.step_peak_memory_bytes), phase));
    }
    bar.update(runs.size());
  }
  for (const auto& e : runs) {
    if (options.strict_memory && !e.result.out_of_memory.empty()) {
      throw Error(describe_out_of_memory(e.graph, e.result.out_of_memory.front()));
    }
  }
  if (!options.vcd_file.empty()) {
    std::cerr << "wrote SystemC's VCD trace to " << options.vcd_file << " (open it in GTKWave)\n";
  }
  if (tracing) {
    write_output_file(options.trace_file, chrome_trace_json(runs[0].graph, runs[0].result));
    std::cerr << "wrote Chrome trace to " << options.trace_file << " (open it in ui.perfetto.dev)\n";
  }

  if (options.json) {
    print_skipped(skipped, std::cerr);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      nlohmann::ordered_json j = result_to_json(runs[i].graph, runs[i].result, options.task_times);
      if (phase > 0) {
        j["peak_phase"] = phase;
        j["step_peak_over_phases_bytes"] = phased_step_peaks[i];
      }
      list.push_back(std::move(j));
    }
    std::cout << (runs.size() == 1 && skipped.empty() ? list[0] : list).dump(2) << "\n";
    return;
  }

  const TaskGraph& first = runs.front().graph;
  std::cout << fmt::format("{} · {} · {} · {} microbatches x {} samples · {} minibatches · {}\n",
                           first.model, first.schedule, first.hardware, first.microbatches,
                           first.samples_per_microbatch, first.minibatches,
                           options.engine == "analytic" ? "analytic evaluator (no bandwidth sharing)"
                                                        : "SystemC simulator");
  std::vector<std::string> columns = {"P", "total_cycles", "total_s", "iteration_cycles", "iteration_s", "speedup",
                                      "mean_util", "bubble", "peak_memory", "link_bytes"};
  if (phase > 0) {
    columns.push_back("step_peak");
    columns.push_back("over_phases");
  }
  Table table(columns);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Evaluated& e = runs[i];
    const Result& r = e.result;
    std::vector<std::string> row = {
        std::to_string(graph_gpus(e.graph)), std::to_string(r.total_cycles), fmt::format("{:.4g}", r.total_s),
        fmt::format("{:.0f}", r.iteration_cycles), fmt::format("{:.4g}", r.iteration_s),
        baseline_iteration > 0 ? fmt::format("{:.2f}x", graph_replicas(e.graph) * baseline_iteration / r.iteration_cycles)
                               : "-",
        fmt::format("{:.3f}", r.mean_utilization), fmt::format("{:.1f}%", 100 * r.bubble_fraction),
        human_bytes(max_peak(r.peak_memory_bytes)), human_bytes(sum_of(r.link_bytes))};
    if (phase > 0) {
      row.push_back(human_bytes(max_peak(r.step_peak_memory_bytes)));
      row.push_back(human_bytes(phased_step_peaks[i]));
    }
    table.add_row(row);
  }
  table.print(std::cout);
  if (phase > 0) {
    std::vector<std::string> moved;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (phased_step_peaks[i] > max_peak(runs[i].result.step_peak_memory_bytes)) {
        moved.push_back(std::to_string(graph_gpus(runs[i].graph)));
      }
    }
    const std::string verdict = moved.empty() ? std::string("no count's peak moved with the phase")
                                              : fmt::format("the step peak moved with the phase (a race between "
                                                            "processors) at P = {}",
                                                            fmt::join(moved, ", "));
    std::cout << fmt::format("step_peak: the steady step's peak as timed; over_phases: the largest with each "
                             "processor's tasks {:.1f}% slower and faster than their price, one at a time; {}\n",
                             100 * phase, verdict);
  }
  print_skipped(skipped, std::cout);
  if (runs.size() == 1 || options.per_processor) {
    for (const auto& e : runs) {
      std::cout << "\nP=" << e.graph.processor_count() << " per processor (idle cycles by reason):\n";
      print_per_processor(e);
    }
  }
  for (const auto& e : runs) {
    for (const auto& oom : e.result.out_of_memory) {
      std::cout << "warning: P=" << e.graph.processor_count() << ": " << describe_out_of_memory(e.graph, oom) << "\n";
    }
  }
  for (const auto& e : runs) {  // what a generator computed about its schedule (layerpipe)
    const auto& m = e.graph.schedule_metrics;
    if (m.count("period_cycles") && m.count("iteration_bound_cycles") && m.count("processor_bound_cycles")) {
      std::cout << fmt::format("P={}: modulo schedule period {:.0f} cycles; iteration bound {:.4g}, processor "
                               "bound ceil(work / P) {:.0f}, so at best {:.0f}\n",
                               e.graph.processor_count(), m.at("period_cycles"), m.at("iteration_bound_cycles"),
                               m.at("processor_bound_cycles"), m.at("lower_bound_cycles"));
    }
    if (m.count("period_optimal")) {  // the exact scheduler's
      const std::string period =
          m.at("period_fixed") > 0 ? fmt::format("period {:.0f} as asked", m.at("period_cycles"))
          : m.at("period_optimal") > 0 ? fmt::format("period {:.0f}, proven least", m.at("period_cycles"))
                                       : fmt::format("period {:.0f}, not proven least (none below {:.0f})",
                                                     m.at("period_cycles"), m.at("period_proven_lower_cycles"));
      std::cout << fmt::format(
          "P={}: exact scheduler ({:.1f} s): {}; {:.0f} bytes per iteration across processors ({}, at least "
          "{:.0f}); greedy: period {:.0f}, {:.0f} bytes\n",
          e.graph.processor_count(), m.at("solve_s"), period, m.at("scheduled_bytes"),
          m.at("bytes_optimal") > 0 ? "proven fewest" : "not proven fewest", m.at("scheduled_bytes_lower_bound"),
          m.at("greedy_period_cycles"), m.at("greedy_bytes"));
      if (m.count("program_too_large") && m.at("program_too_large") > 0) {
        std::cout << fmt::format("P={}: the integer program has {:.0f} rows, too many to solve within the limits: this "
                                 "is the greedy schedule after a local search for fewer bytes\n",
                                 e.graph.processor_count(), m.at("program_rows"));
      }
    }
  }
  if (options.graph_file.empty()) {
    const int replicas = graph_replicas(runs.front().graph);
    std::cout << "speedup: steady-state iteration time at P=1 over that at P"
              << (replicas > 1 ? fmt::format(", times the {} data-parallel replicas' batches,", replicas) : ",") << " " << baseline_schedule
              << (baseline_schedule == "sequential" ? " (this schedule needs more than one processor)" : "") << "\n";
  }
}

void add_timing_command(CLI::App& app, const std::string& name, const std::string& engine,
                        const std::string& help) {
  auto options = std::make_shared<TimingOptions>();
  options->engine = engine;
  auto* command = app.add_subcommand(name, help);
  add_graph_options(*command, options->graph, "1-9", ProcessorCounts::list);
  command->add_option("--graph", options->graph_file,
                      "run a task graph file (from `pipetwin schedule`) instead of building one");
  command->add_flag("--json", options->json,
                    "print JSON: one object for one processor count, a list for several");
  command->add_flag("--task-times", options->task_times, "with --json: start and end of every task");
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr (shown on a terminal for several processor counts)");
  command->add_flag("--per-processor", options->per_processor,
                    "print each processor's utilization, idle time by reason and memory for every count");
  command->add_option("--peak-phase", options->peak_phase,
                      "also predict each count's steady step peak as the largest over its processors paced this "
                      "fraction slower and faster than their price, one at a time (2P more predictions a count): a "
                      "step peak can hang on which of two processors' events comes first, which one timing fixes and "
                      "a run's straying tasks reach (docs/executor.md, \"Step peaks over phases\"); auto: the "
                      "--calibration table's task spread; 0: off")
      ->capture_default_str()
      ->check(number_or_auto([](double fraction) { return fraction >= 0 && fraction < 1; }, "a fraction from 0 to below 1"));
  command->add_flag("--strict-memory", options->strict_memory,
                    "fail when a processor's memory exceeds its capacity (default: warn)");
  command->add_option("--trace", options->trace_file,
                      "write a Chrome trace (Perfetto) of the run: a track per processor and link, "
                      "bubbles labelled, memory counters")
      ->check(writable_output_file());
  if (engine == "systemc") {
    command->add_option("--vcd", options->vcd_file,
                        "also write SystemC's own VCD trace (FILE.vcd): each processor's busy signal and each link medium's "
                        "transfers in service, in the module hierarchy's names, at the clock period (GTKWave)");
    command->add_flag("--packets", options->packets,
                      "serve links packet by packet (round robin, credit-based flow control) instead of the fluid "
                      "model; equal where nothing contends, slower to simulate");
    command->add_option("--packet-bytes", options->packet_bytes, "with --packets: bytes per packet")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
    command->add_option("--credits", options->credits,
                        "with --packets: receive buffers per link (0: enough for the link's round trip)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
  }
  command->callback([options] { run(*options); });
}

}  // namespace

void add_timing_commands(CLI::App& app) {
  add_timing_command(app, "evaluate", "analytic",
                     "time a schedule with the analytic evaluator (dependencies, processor and in-order link "
                     "orders, no bandwidth sharing): cycles, iteration period, utilization, bubbles, memory");
  add_timing_command(app, "simulate", "systemc",
                     "time a schedule with the SystemC simulator (link contention included); same "
                     "options and keys as evaluate");
}

}  // namespace pipetwin::cli
