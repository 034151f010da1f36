// `pipetwin validate --device cpu|cuda`: predicted (simulator, from a calibration table) against
// measured (the executor) step time, speedup over one processor and peak memory, per schedule and
// processor count, with errors and whether the two rank the schedules alike (Kendall tau). With
// --distributed (under mpirun), runs with at least as many processors as ranks run across the
// ranks, and their tables are taken by every rank at once, with transfers timed as messages.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pipetwin/sim/engines.hpp"
#include "executor_setup.hpp"
#include "graph_options.hpp"
#include "profile_calibration.hpp"
#include "pipetwin/exec/cpu/speed_probe.hpp"
#include "pipetwin/exec/cpu/validation.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/exec/cuda_probe.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "rank_followers.hpp"
#include "stop_signals.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/views.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& names) {
  std::string list;
  for (std::size_t k = 0; k < names.size(); ++k) list += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
  return list;
}

struct ValidateOptions {
  GraphConfig config;
  ExecutorOptions executor;
  std::string schedules = "sequential,gpipe,1f1b,pipedream";
  std::string procs = "1,2";
  std::string engine;
  int repeats = kDefaultProfileRepeats;
  std::string concurrent_timing = "pipeline";
  int runs = 5;
  int max_runs = 0;
  int warmup_rounds = 0;
  std::string tables_out;  // a folder for the kept rounds' calibration tables, or empty
  std::string traces_out;  // a folder for the kept rounds' runs as Chrome traces, or empty
  bool json = false;
  bool quiet = false;
  double target = 0.05;  // the step-time error a verdict is asked for
  double machine_tolerance = 0.06;  // --device cpu: how far off its usual speed the machine may run (0: no readings)
  int machine_retakes = 2;
  double table_tolerance = 0.10;   // a one-processor table this far over its peers' minibatch is taken again (0: none)
  double co_run_tolerance = 0.25;  // a table for P >= 2 this far over its peers' co-run slowdown is taken again (0: none)
  bool distributed = false;
  double message_timeout_s = 60;
  double time_limit_s = 0;  // no round is begun that would end past this many seconds (0: none)
  std::string peak_phase = "auto";  // a fraction, or auto: each row's table's task spread
};

// Every configuration, and the calibration, must see processors of one size: SM partitions
// default to the largest equal share for the largest P (in multiples of 8 SMs).
void fix_partition_size(ExecutorOptions& executor, int largest_p, bool say) {
  if (executor.device != "cuda" || executor.cuda.placement != "partitions" || executor.cuda.partition_sms > 0) return;
  const CudaProbe probe = probe_cuda();
  if (executor.cuda.device >= static_cast<int>(probe.devices.size())) return;  // the executor says why
  const int sms = probe.devices[static_cast<std::size_t>(executor.cuda.device)].sm_count;
  executor.cuda.partition_sms = std::max(8, sms / largest_p / 8 * 8);
  if (say) std::cerr << "SM partitions of " << executor.cuda.partition_sms << " SMs for every P (--partition-sms)\n";
}

void run(ValidateOptions& options, mpi::MpiSession* session) {
  check_device(options.executor.device);
  const std::string engine = options.engine.empty() ? default_engine() : options.engine;
  check_engine(engine);
  const auto counts = parse_procs(options.procs);
  if (session != nullptr) {
    if (options.executor.device != "cpu") throw Error("--distributed validates --device cpu only: the link between ranks is timed with messages through host memory, not the CUDA executor's NCCL or staged copies (run --distributed --device cuda trains)");
    checked_message_timeout_s(options.message_timeout_s);
    for (const int p : counts) {
      if (p != 1 && p < session->ranks()) {
        throw Error(fmt::format("--distributed: P={} is fewer processors than the {} ranks (each rank runs at least one; "
                                "P=1, the baselines, runs on rank 0 alone)",
                                p, session->ranks()));
      }
    }
  }
  const std::vector<std::string> schedules = parse_schedule_list(options.schedules);
  fix_partition_size(options.executor, *std::max_element(counts.begin(), counts.end()), !options.quiet);
  GraphConfig config = options.config;
  default_hardware_for_device(options.executor, config.hardware);
  const ScheduleRequest request = make_request(config);
  const bool profiled_here = config.calibration_file.empty();
  if (!options.tables_out.empty() && !profiled_here) {
    throw Error("--tables-out keeps the tables validate takes each round; with --calibration it takes none");
  }
  if (options.executor.unmarked_twins != "auto" && !profiled_here) {
    throw Error("--unmarked-twins is how validate's profiles fit the tasks' overheads; with --calibration it makes none");
  }
  // A table's handoff is that of runs with its spin: say where these runs spin otherwise.
  const Calibration* given = request.hardware.calibration.get();
  if (!options.quiet && given != nullptr && given->device == "cpu" && given->handoff_s >= 0) {
    for (const int p : counts) {
      const double spin_s =
          handoff_spin_for(p, handoff_spin_s(options.executor), session != nullptr || options.executor.transfer_threads == "links");
      if (p == 1 || std::abs(spin_s - given->handoff_spin_s) < 1e-9) continue;
      std::cerr << fmt::format("note: {} timed its handoff with {:.0f} us of spin, the runs on {} processors spin {:.0f} us "
                               "(--handoff-spin-us): their transfers' latency is not its\n",
                               config.calibration_file, given->handoff_spin_s * 1e6, p, spin_s * 1e6);
      break;
    }
  }
  if (session != nullptr && session->rank() != 0) {  // the other ranks do what rank 0 asks
    try {
      follow_rank_leader(session->transport(), config, options.executor, options.repeats, options.message_timeout_s);
    } catch (const std::exception& e) {
      end_job(*session, e);
    }
    return;
  }
  std::unique_ptr<RankLeader> leader;
  if (session != nullptr) {
    leader = std::make_unique<RankLeader>(session->transport(), config, options.executor, options.repeats,
                                          options.message_timeout_s);
  }
  const auto data = load_data(options.executor, request.network, "train");
  ValidationOptions validation;
  if (profiled_here && leader) {
    validation.calibrate = [&, said = false](int processors) mutable {
      const bool say = !options.quiet && !said;
      said = true;
      return leader->calibrate(processors, say);
    };
  } else if (profiled_here) {
    // Calibrations at the start of every round of runs (A/B/A/B), progress only for the first;
    // a table for P processors timed as --concurrent-timing says (threads on the CPU, SM partitions
    // on a GPU).
    validation.calibrate = [&, said = false](int processors) mutable {
      const bool say = !options.quiet && !said;
      said = true;
      return profile_device_calibration(config, options.executor, options.repeats, say, processors,
                                        cpu::parse_concurrent_timing(options.concurrent_timing));
    };
  }
  validation.schedules = schedules;
  validation.processors = counts;
  validation.runs = options.runs;
  validation.max_runs = options.max_runs;
  validation.warmup_rounds = options.warmup_rounds;
  if (!options.tables_out.empty()) {
    validation.on_calibration = [&](int round, int processors, const Calibration& table) {
      write_output_file(fmt::format("{}/{}-round{}-p{}.json", options.tables_out, config.model, round + 1, processors),
                        calibration_to_json_text(table));
    };
  }
  if (!options.traces_out.empty()) {
    validation.on_run = [&](int round, const std::string& schedule, int processors, const TaskGraph& graph,
                            const Result& predicted, const TrainingRun& measured) {
      write_output_file(fmt::format("{}/{}-{}-p{}-round{}.json", options.traces_out, config.model, schedule, processors, round + 1),
                        chrome_trace_json(graph, {&measured.result, &predicted}));
    };
  }
  validation.ci_target = options.target;
  validation.training = training_options(options.executor);
  // On the CPU, the machine's speed read on the CPUs the runs may use, beside every calibration
  // and run (ValidationOptions::read_machine).
  if (options.executor.device == "cpu" && session == nullptr && options.machine_tolerance > 0) {
    const std::vector<int> cpus =
        cpu::cpus_to_read(validation.training.pin_cpus, *std::max_element(counts.begin(), counts.end()));
    validation.read_machine = [cpus] { return cpu::time_fixed_work_s(cpus); };
    validation.machine_tolerance = options.machine_tolerance;
  }
  validation.machine_retakes = options.machine_retakes;
  validation.table_tolerance = options.table_tolerance;
  validation.co_run_tolerance = options.co_run_tolerance;
  if (!options.quiet) validation.progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
  // Ctrl-C or SIGTERM ends the rounds once the one under way is done, the rounds done reported;
  // across ranks the launcher's SIGTERM ends every rank as before.
  std::optional<StopSignals> stop_signals;
  if (session == nullptr) {
    stop_signals.emplace("pipetwin validate: stopping once this round's runs end, to report the rounds done "
                         "(interrupt again to quit now)\n");
    validation.stop_requested = [&stop_signals] { return stop_signals->requested(); };
  }
  validation.time_limit_s = options.time_limit_s;
  validation.peak_phase = options.peak_phase == "auto" ? -1.0 : std::stod(options.peak_phase);
  std::string placement;
  ValidationReport report;
  try {
    report = validate(config, *data, validation, [&](const TaskGraph& graph) { return run_engine(engine, graph); },
                      leader ? leader->runner() : executor_runner(options.executor, &placement));
  } catch (const std::exception& e) {
    if (leader) end_job(*session, e);  // the followers wait for requests: the job ends with this rank
    throw;
  }
  if (leader) {
    placement = fmt::format("{} MPI ranks, {}", session->ranks(), placement.empty() ? "CPU threads" : placement);
    leader.reset();  // the followers are done
  }
  const auto& rows = report.rows;
  const double drift = report.calibration_drift;
  // Why the errors cannot be trusted, if they cannot. A drift of the machine's speed between
  // rounds is not a reason: each round's prediction is judged against that round's runs (paired),
  // and what a change of speed within a round leaves shows in the interval.
  std::vector<std::string> verdict;
  if (!(report.error_ci <= options.target)) {
    verdict.push_back(fmt::format("after {} rounds the step errors are known to ±{:.1f}% (95% confidence, the median over "
                                  "rows; identical runs spread by {:.1f}%), wider than the {:.0f}% target",
                                  report.rounds, 100 * report.error_ci, 100 * report.noise_floor, 100 * options.target));
  }
  if (!(report.speedup_error_ci <= options.target)) {
    verdict.push_back(fmt::format("after {} rounds the speedup errors are known to ±{:.1f}% (95% confidence, the median "
                                  "over the rows beyond one processor), wider than the {:.0f}% target",
                                  report.rounds, 100 * report.speedup_error_ci, 100 * options.target));
  }

  if (options.json) {
    nlohmann::ordered_json j;
    j["model"] = request.network.name;
    j["device"] = options.executor.device;
    j["hardware"] = config.hardware;  // the profile the predictions' graphs were built on (its clock)
    j["placement"] = placement;
    j["engine"] = engine;
    j["microbatches"] = config.microbatches;
    j["minibatches"] = config.minibatches;
    j["samples_per_microbatch"] = request.network.batch / config.microbatches;
    j["rows"] = validation_rows_json(report);
    j.update(validation_summary_json(report));
    j["too_noisy"] = verdict;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} · {} microbatches x {} samples · {} minibatches · predicted by {} from a calibration, "
                           "measured on {}\n",
                           request.network.name, config.microbatches, request.network.batch / config.microbatches,
                           config.minibatches, engine, options.executor.device);
  std::cout << "measured on " << placement << " (placement of the largest P)\n";
  Table table({"schedule", "P", "predicted_step_ms", "measured_step_ms", "error", "error_ci", "noise", "task_time_error", "replay_error",
               "co_run_weight", "predicted_speedup", "measured_speedup", "speedup_error", "predicted_step_peak", "measured_step_peak", "peak_error", "highest_run_peak"});
  for (const auto& row : rows) {
    table.add_row({row.schedule, std::to_string(row.processors), fmt::format("{:.3f}", row.predicted_step_s * 1e3),
                   fmt::format("{:.3f}", row.measured_step_s * 1e3), fmt::format("{:+.1f}%", 100 * row.step_error),
                   fmt::format("±{:.1f}%", 100 * row.error_ci), fmt::format("±{:.1f}%", 100 * row.measured_spread), fmt::format("{:+.1f}%", 100 * row.task_time_error),
                   fmt::format("{:+.1f}%", 100 * row.replay_error), fmt::format("{:.2f}", row.co_run_weight),
                   fmt::format("{:.2f}x", row.predicted_speedup), fmt::format("{:.2f}x", row.measured_speedup),
                   row.baseline == row.schedule && row.processors == 1
                       ? std::string("-")
                       : fmt::format("{:+.1f}% ±{:.1f}%", 100 * row.speedup_error, 100 * row.speedup_error_ci),
                   human_bytes(row.predicted_step_peak_bytes), human_bytes(row.measured_step_peak_bytes),
                   fmt::format("{:+.1f}%", 100 * row.step_peak_error), human_bytes(row.measured_peak_max_bytes)});
  }
  table.print(std::cout);
  std::cout << "step peak: a steady-state minibatch's peak memory, the median over the run's second half (the "
               "median run's, the median round's prediction; peak_error paired by round as the step error); "
               "highest_run_peak: the highest run's peak over the whole run, its first minibatch and stalls included\n";
  std::vector<std::string> raced;  // rows whose predicted step peak hangs on the processors' phase
  double largest_phase = 0;
  for (const auto& row : rows) {
    largest_phase = std::max(largest_phase, row.peak_phase);
    int moved = 0;  // rounds whose peak over phases is not the simulated timing's
    for (std::size_t r = 0; r < row.predicted_rounds_step_peak_bytes.size() && r < row.predicted_rounds_nominal_step_peak_bytes.size(); ++r) {
      moved += row.predicted_rounds_step_peak_bytes[r] != row.predicted_rounds_nominal_step_peak_bytes[r];
    }
    if (moved > 0) {
      raced.push_back(fmt::format("{} P={} (in {} of {} rounds; {} as timed, the median round's)", row.schedule, row.processors, moved,
                                  row.predicted_rounds_step_peak_bytes.size(), human_bytes(row.predicted_nominal_step_peak_bytes)));
    }
  }
  if (largest_phase > 0) {
    std::cout << fmt::format("predicted step peak: the largest over each processor paced up to {:.1f}% off its price "
                             "(--peak-phase; the tables' task spread by default); ",
                             100 * largest_phase)
              << (raced.empty() ? std::string("no row's peak moved with the phase in any round")
                                : "rows whose peak hangs on the phase: " + listed(raced))
              << "\n";
  }
  if (profiled_here && report.rounds > 1) {
    std::cout << "error: the median over rounds of each round's prediction over that round's run (paired); the step "
                 "columns are medians over rounds, so the error need not be their ratio\n";
  }
  if (report.stopped_early) {
    std::cout << fmt::format("stopped after {} round{} of --runs {} (interrupted, or --time-limit): every figure is "
                             "over {}\n",
                             report.rounds, report.rounds == 1 ? "" : "s", options.runs,
                             report.rounds == 1 ? "that round" : "those rounds");
  }
  std::cout << fmt::format("step-time error: mean {:.1f}%, largest {:.1f}%, known to ±{:.1f}% ({} rounds); noise "
                           "floor {:.1f}% (identical runs' half-range over their median, the median over rows)",
                           100 * report.mean_abs_step_error, 100 * report.max_abs_step_error, 100 * report.error_ci,
                           report.rounds, 100 * report.noise_floor);
  if (profiled_here) {
    std::cout << fmt::format("; {} calibrations, drift {:+.1f}%, spread ±{:.1f}%", report.calibrations, 100 * drift,
                             100 * report.calibration_spread);
  }
  std::cout << "\n";
  if (rows.size() > 1) {
    std::cout << fmt::format("speedup error (each round's predicted speedup over its measured one, the median over "
                             "rounds, with its 95% interval): mean {:.1f}%, largest {:.1f}%, known to ±{:.1f}% (the "
                             "median over rows)\n",
                             100 * report.mean_abs_speedup_error, 100 * report.max_abs_speedup_error,
                             100 * report.speedup_error_ci);
  }
  if (report.machine_state) {
    const ValidationReport::MachineState& m = *report.machine_state;
    std::cout << fmt::format("machine: {} readings of its speed (a fixed piece of arithmetic on each CPU), {:.0f}% of them "
                             "more than {:.0f}% off the usual; {} runs and {} calibrations taken again, {} runs and {} "
                             "calibrations kept off it once their retakes ran out (--machine-tolerance, --machine-retakes)\n",
                             m.readings, 100 * m.off_fraction, 100 * m.tolerance, m.retaken_runs, m.retaken_calibrations,
                             m.kept_off_runs, m.kept_off_calibrations);
  }
  std::set<int> judged_off;  // processor counts with a table taken again or kept off its peers
  for (const auto* tables : {&report.retaken_tables, &report.kept_off_tables}) {
    for (const auto& [p, count] : *tables) judged_off.insert(p);
  }
  for (const int p : judged_off) {
    const auto retaken = report.retaken_tables.find(p);
    const auto kept = report.kept_off_tables.find(p);
    std::cout << fmt::format("tables: {} for {} taken again, off their earlier peers ({}), {} kept so once their retakes "
                             "ran out (--machine-retakes)\n",
                             retaken == report.retaken_tables.end() ? 0 : retaken->second,
                             p == 1 ? std::string("one processor") : std::to_string(p) + " processors",
                             p == 1 ? fmt::format("a minibatch more than {:.0f}% over theirs, --table-tolerance",
                                                  100 * options.table_tolerance)
                                    : fmt::format("a co-run slowdown more than {:.0f}% over theirs, --co-run-tolerance",
                                                  100 * options.co_run_tolerance),
                             kept == report.kept_off_tables.end() ? 0 : kept->second);
  }
  for (const auto& [p, slowdown] : report.co_run_slowdown) {
    std::cout << fmt::format("co-run: layers ran {:+.1f}% slower in the tables for {} processors ({}) than alone (rows at P={} "
                             "take them by their overlap next to that pipeline's, co_run_weight)\n",
                             100 * slowdown, p,
                             options.concurrent_timing == "pipeline" ? "timed in a pipeline where the network has the layers for it"
                                                                     : "copies at once",
                             p);
  }
  // A per-row figure's lowest and highest rows, "<figure> (<schedule> P=<p>)" each, where any row's
  // differs from `neutral` (else nothing to say).
  const auto row_range = [&rows](double ValidationRow::*figure, double neutral,
                                 const std::function<std::string(double)>& shown) -> std::optional<std::string> {
    const auto [lowest, highest] = std::minmax_element(rows.begin(), rows.end(), [figure](const ValidationRow& a, const ValidationRow& b) {
      return a.*figure < b.*figure;
    });
    if (lowest == rows.end() || ((*lowest).*figure == neutral && (*highest).*figure == neutral)) return std::nullopt;
    return fmt::format("{} ({} P={}) to {} ({} P={})", shown((*lowest).*figure), lowest->schedule, lowest->processors,
                       shown((*highest).*figure), highest->schedule, highest->processors);
  };
  if (const auto range = row_range(&ValidationRow::footprint_factor, 1, [](double f) { return fmt::format("{:.3f}x", f); })) {
    std::cout << "footprint: each row's table scaled by the bytes its graph holds against those the table was timed at "
                 "(the one-processor profile's gpipe run against its sequential run), "
              << *range << " (footprint_factor in --json)\n";
  }
  if (const auto range = row_range(&ValidationRow::stash_far_share, 0, [](double x) { return fmt::format("{:.2f}", x); })) {
    std::cout << "stashes: each row's layers moved toward their times with every stash held and every core missing its "
                 "caches, by how much longer its processors hold their stashes than the run its table was timed in: "
              << *range << " of the way (stash_far_share in --json)\n";
  }
  if (const auto range = row_range(&ValidationRow::weight_reuse_s, 0, [](double s) { return fmt::format("{:+.1f} us", s * 1e6); })) {
    std::cout << "weights: each row's tasks charged for how warm its order leaves their weights against the table's "
                 "order, per step, processors together: "
              << *range << " (weight_reuse_s in --json)\n";
  }
  if (const auto range = row_range(&ValidationRow::wait_loss_s, 0, [](double s) { return fmt::format("{:+.1f} us", s * 1e6); })) {
    std::cout << "waits: each row's tasks charged for what the waits before them cost the caches (the profile's wait "
                 "curve), per step, processors together: "
              << *range << " (wait_loss_s in --json)\n";
  }
  std::cout << fmt::format("replay error (the engine fed each run's own task times, against that run: the schedule's "
                           "model without the calibration or the machine's speed): mean {:.1f}%, largest {:.1f}%\n",
                           100 * report.mean_abs_replay_error, 100 * report.max_abs_replay_error);
  if (schedules.size() > 1) {
    std::string line = "ranking of schedules (Kendall tau, 1 = same order):";
    for (const auto& [p, t] : report.kendall_tau) {
      // tau-b is 0/0 when every schedule at P is predicted (or measured) alike: no order to compare.
      line += std::isfinite(t) ? fmt::format(" P={} {:.2f}", p, t) : fmt::format(" P={} undefined (no order to compare)", p);
    }
    line += "; over the pairs whose measured order is known (their rounds' ratios clear of 1, at 95% for all pairs at once):";
    for (const auto& [p, t] : report.separable_kendall_tau) {
      const auto& [count, pairs] = report.separable_pairs.at(p);
      line += count > 0 ? fmt::format(" P={} {:.2f} ({} of {} pairs)", p, t, count, pairs)
                        : fmt::format(" P={} none of {} pairs", p, pairs);
    }
    std::cout << line << "\n";
    line = "pairs of schedules, the predicted order against the measured:";
    for (const auto& [p, o] : report.pair_order) {
      line += fmt::format(" P={} {} in order, {} against", p, o.in_order, o.against);
      if (o.predicted_equal > 0) {
        line += fmt::format(", {} predicted the same step (measured up to {:.1f}% apart)", o.predicted_equal,
                            100 * o.widest_predicted_equal_gap);
      }
      if (o.measured_equal > 0) line += fmt::format(", {} measured the same", o.measured_equal);
      line += ";";
    }
    if (line.back() == ';') line.pop_back();
    std::cout << line << "\n";
    // Which schedules run one program (tied both ways), and which others tau-b counts as
    // predicted alike against whatever order the runs give them.
    for (const auto& tau : report.kendall_tau) {
      const int p = tau.first;
      std::map<std::string, std::size_t> program_of;  // schedule -> its same-program group here
      const auto groups = report.same_program_schedules.find(p);
      if (groups != report.same_program_schedules.end()) {
        for (std::size_t g = 0; g < groups->second.size(); ++g) {
          const auto& names = groups->second[g];
          std::cout << fmt::format("P={}: {} run the same program (the same tasks, in the same order, on the same "
                                   "buffers): the ranking ties them, measured as predicted\n",
                                   p, listed(names));
          for (const auto& name : names) program_of[name] = g;
        }
      }
      std::vector<const ValidationRow*> at_p;
      for (const auto& row : rows) {
        if (row.processors == p) at_p.push_back(&row);
      }
      std::sort(at_p.begin(), at_p.end(), [](const ValidationRow* a, const ValidationRow* b) {
        return a->predicted_step_s < b->predicted_step_s;
      });
      for (std::size_t i = 0; i < at_p.size();) {
        std::size_t j = i + 1;  // [i, j): predicted the same step, a tie as kendall_tau counts one (equal)
        while (j < at_p.size() && at_p[j]->predicted_step_s == at_p[i]->predicted_step_s) ++j;
        // One of each same-program group: those are tied both ways.
        std::vector<std::string> distinct;
        std::set<std::size_t> groups_seen;
        for (std::size_t k = i; k < j; ++k) {
          const auto it = program_of.find(at_p[k]->schedule);
          if (it == program_of.end() || groups_seen.insert(it->second).second) distinct.push_back(at_p[k]->schedule);
        }
        if (distinct.size() > 1) {
          std::cout << fmt::format("P={}: {} are predicted the same step; tau-b counts each such pair against any "
                                   "order the runs give it, so it stays below 1 unless they measure alike\n",
                                   p, listed(distinct));
        }
        i = j;
      }
    }
  }
  for (const auto& reason : verdict) {
    std::cout << "too noisy to judge a " << fmt::format("{:.0f}%", 100 * options.target) << " error: " << reason
              << "; run it on a quieter machine, or with more --runs or --max-runs\n";
  }
  // Short runs are what a machine's jitter weighs on most (mlp: 16 steps of 1.4 ms had a noise
  // floor of 11%, 128 steps 3.8%): say how many steps make the shortest run a quarter second.
  double shortest_run_s = 0;
  for (const auto& row : rows) {
    const double run_s = row.measured_step_s * config.minibatches;
    if (run_s > 0 && (shortest_run_s == 0 || run_s < shortest_run_s)) shortest_run_s = run_s;
  }
  constexpr double kLongEnoughRunS = 0.25;
  if (!verdict.empty() && shortest_run_s > 0 && shortest_run_s < kLongEnoughRunS) {
    const int steps = static_cast<int>(std::ceil(config.minibatches * kLongEnoughRunS / shortest_run_s));
    std::cout << fmt::format("the shortest configuration's runs last {:.2g} ms: --steps {} makes them about a quarter "
                             "second, which the machine's jitter weighs on less\n",
                             1e3 * shortest_run_s, steps);
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  options->config.model = "lenet5";
  options->config.hardware = "cpu-core";
  options->config.microbatches = 4;
  options->config.minibatches = 16;
  auto* command = app.add_subcommand(
      "validate", "predicted against measured: step time, speedup and peak memory per schedule and processor count");
  command->add_option("--model,-m", options->config.model, "network from `pipetwin models`")->capture_default_str();
  command->add_option("--schedules", options->schedules, "comma-separated schedules")->capture_default_str();
  command->add_option("--procs,-p", options->procs, "processor counts, e.g. 1,2 or 1-4")->capture_default_str();
  command->add_option("--microbatches", options->config.microbatches, "microbatches per minibatch")->capture_default_str();
  command->add_option("--steps,--minibatches", options->config.minibatches, "minibatches per run")->capture_default_str();
  command->add_option("--hardware", options->config.hardware, "hardware profile the calibration is attached to")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model or schedules, e.g. batch=64")->take_all();
  command->add_option("--calibration", options->config.calibration_file,
                      "calibration table from `pipetwin profile`, used throughout (default: profile at the start of every round of runs)")
      ->check(CLI::ExistingFile);
  command->add_option("--engine", options->engine, "predicting engine: systemc (default when built) or analytic");
  add_executor_options(*command, options->executor, true);
  command->add_option("--repeats", options->repeats, "profiling: timings per task kind and layer (at least: a CPU's one-processor table is timed over 100 ms or more of steps)")->capture_default_str();
  add_concurrent_timing_option(*command, options->concurrent_timing);
  add_unmarked_twins_option(*command, options->executor);
  command->add_option("--target", options->target,
                      "the step-time and speedup error to judge (a fraction): when the errors' 95% confidence interval "
                      "is wider, the output says the errors cannot be trusted; --max-runs adds rounds until the intervals "
                      "are this narrow")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--runs", options->runs,
                      "rounds: each profiles (without --calibration), then runs every configuration once; a row's error "
                      "is the median over rounds of the round's prediction over the round's run (paired, so a change of "
                      "the machine's speed between rounds cancels), the step columns are medians over rounds, and the "
                      "runs' spread is the noise column")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  command->add_option("--max-runs", options->max_runs,
                      "keep adding rounds after --runs until every row's step error and speedup error are known within "
                      "--target (95% confidence), up to this many rounds (0: exactly --runs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  command->add_option("--warmup-rounds", options->warmup_rounds,
                      "whole rounds (calibrations and every configuration's run) before the first kept one, not kept: "
                      "for a machine whose runs speed up over their first rounds (an H100's 8-partition runs did "
                      "over three, docs/cuda-executor.md)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  command->add_option("--tables-out", options->tables_out,
                      "an existing folder for each kept round's calibration tables, MODEL-roundR-pP.json, to predict "
                      "those rounds again offline (`pipetwin simulate --calibration`, experiments/gpu/repredict.py)")
      ->check(CLI::ExistingDirectory);
  command->add_option("--traces-out", options->traces_out,
                      "an existing folder for each kept round's runs as Chrome traces (Perfetto), "
                      "MODEL-SCHEDULE-pP-roundR.json: the measured tasks beside the round's prediction of the same "
                      "graph, to see which tasks of a row ran off their table")
      ->check(CLI::ExistingDirectory);
  command->add_option("--machine-tolerance", options->machine_tolerance,
                      "cpu: read the machine's speed (a fixed piece of arithmetic timed on each CPU) before and after "
                      "every calibration and run, and take one again when a reading beside it is more than this "
                      "fraction off the usual (the median reading so far): a host that lends a core's other "
                      "hyperthread out now and then slows everything by 20-40% meanwhile (0: no readings)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--machine-retakes", options->machine_retakes,
                      "at most this many more tries of a calibration or run taken off the usual speed (cpu), or of a "
                      "table judged off its peers (--table-tolerance, --co-run-tolerance); the last one is kept and "
                      "counted")
      ->capture_default_str()
      ->check(CLI::Range(0, 10));
  command->add_option("--table-tolerance", options->table_tolerance,
                      "without --calibration: take a round's one-processor table again when its minibatch ran more "
                      "than this fraction slower than the earlier rounds' median (from the fourth round): a "
                      "2-vCPU VM's steps now and then run about 20% slower for tens of milliseconds, and a table "
                      "timed then predicts the round's runs as slow (0: none judged)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  command->add_option("--co-run-tolerance", options->co_run_tolerance,
                      "without --calibration: take a round's table for two or more processors again when its "
                      "layers ran more than this fraction slower, against the same round's one-processor table, "
                      "than the earlier rounds' median (from the fourth round): a 2-vCPU VM's host now and then "
                      "runs both vCPUs as one core's hyperthreads, and a table timed then has every layer 1.6-1.8x "
                      "its usual time (0: none judged)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  command->add_option("--time-limit", options->time_limit_s,
                      "seconds: begin no round that would end past this (a round as long as the last one), and "
                      "report the rounds done; at least one round is always taken. Ctrl-C or SIGTERM also ends the "
                      "rounds once the one under way is done (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  command->add_option("--peak-phase", options->peak_phase,
                      "predict each row's step peak as the largest over its processors paced this fraction slower and "
                      "faster than their price, one at a time (0: the simulated timing alone), or auto: the row's "
                      "table's task spread (its tasks' median distance from their like's median). A step peak can "
                      "hang on which of two processors' events comes first, which one timing fixes and a run's "
                      "straying tasks reach in many steps (docs/executor.md, \"Step peaks over phases\")")
      ->capture_default_str()
      ->check(number_or_auto([](double fraction) { return fraction >= 0 && fraction < 1; }, "a fraction from 0 to below 1"));
  command->add_flag("--json", options->json, "print the table as JSON");
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->add_flag("--distributed", options->distributed,
                    "validate runs across processes (start under mpirun -np N): configurations with at least N "
                    "processors run across the ranks, and their tables are taken on every rank at once, with "
                    "transfers timed as messages between ranks; P=1 baselines run on rank 0 alone");
  command->add_option("--message-timeout", options->message_timeout_s,
                      "--distributed: seconds a task may wait for a silent rank before the job ends")
      ->capture_default_str();
  command->callback([options] { with_ranks(options->distributed, options->message_timeout_s, [&](mpi::MpiSession* session) { run(*options, session); }); });
}

}  // namespace pipetwin::cli
