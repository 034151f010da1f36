// Predicted against measured (docs/design.md, "Executors"): for each schedule and processor count, a prediction
// by an engine the caller passes (the simulator or the evaluator, so exec/ needs no SystemC) and
// an executor's measured run (CPU or CUDA); step time, speedup over one processor, peak memory,
// errors, and whether the two rank the schedules alike (Kendall tau). Used by `pipetwin validate`
// and by Python's pipetwin.validate.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

struct ValidationRow {
  std::string schedule;
  int processors = 0;
  std::string baseline;  // the schedule whose one-processor run the speedups divide
  double predicted_step_s = 0, measured_step_s = 0;  // medians over the rounds
  // The baseline's step over the row's: the median over rounds of each round's ratio (the two
  // runs of a round, and the predictions from a round's calibration, taken together).
  double predicted_speedup = 0, measured_speedup = 0;
  // Predicted over measured speedup, minus 1, paired by round as step_error (each round's
  // predicted speedup, from its calibration, over that round's measured one; the median over
  // rounds), so it need not be the ratio of the two medians above; and its 95% confidence
  // half-width, as error_ci. Both 0 for the baseline's own row (its speedup is 1 by definition).
  double speedup_error = 0, speedup_error_ci = 0;
  // The highest over its processors of a run's (a prediction's) peak memory: the median over runs
  // (over the rounds' predictions), as the step times; and the highest run's. A peak that hangs
  // on timing (a processor held up while the other's buffers arrive) is one run's, and a machine
  // that stalls a thread for milliseconds can raise it in one run of nine.
  std::int64_t predicted_peak_bytes = 0, measured_peak_bytes = 0, measured_peak_max_bytes = 0;
  // The same of a steady-state step's peak (Result::step_peak_memory_bytes: the median over the
  // second half of the minibatches of each one's peak), which is what the prediction is compared
  // with: a run's whole peak also holds its first minibatch, whose tasks run 1.5-3x slower than
  // later ones, and any step a stalled thread reorders, neither of which the model predicts.
  // The predicted one is the largest over the phases the row's processors can take against each
  // other (step_peak_over_phases, by ValidationOptions::peak_phase); the nominal one, its own
  // timing's. They differ where a peak hangs on a race between processors (resnet8's LayerPipe
  // and pipedream at P = 2, docs/executor.md, "Step peaks over phases").
  std::int64_t predicted_step_peak_bytes = 0, measured_step_peak_bytes = 0;
  std::int64_t predicted_nominal_step_peak_bytes = 0;
  // The phase fraction the latest round's prediction took (ValidationOptions::peak_phase; 0: its
  // own timing only).
  double peak_phase = 0;
  // Predicted over measured step peak, minus 1: the median over rounds of each round's ratio
  // (paired as step_error: a calibration can move LayerPipe's layers between processors, and a
  // round's prediction and run hold the same graph), else the medians' ratio. NaN with no run.
  double step_peak_error = 0;
  // On GPUs: the memory pool's high-water mark (TrainingRun::device_pool_peak_bytes, the largest
  // over the GPUs; the median over runs): the graph's buffers as the GPUs held them, with the
  // pool's caches and the convolution workspaces. 0 on the CPU.
  std::int64_t measured_pool_peak_bytes = 0;
  // The noise of the measurement: half the range of the runs' step times over their median. An
  // error within it cannot be told from noise.
  double measured_spread = 0;
  // The replay: the same engine fed each run's own measured task durations (every task's end minus
  // its start), against that run's step; the median over runs. What is left is the schedule's
  // model alone (dependencies, handoffs, links, the steady-state window), not the calibration,
  // and a machine's change of speed moves both sides alike. NaN when the runner gave no task times.
  double replayed_step_s = 0;
  double replay_error = 0;
  // The processors' measured busy time (their tasks' durations after the first step, summed:
  // the step time leaves the first out too) over what the graph's calibrated costs add up to,
  // each with what the graph's wait loss charges the wait it had before it in that run
  // (schedule/wait_loss.hpp; none without a wait curve), minus 1; the median over runs. Where the
  // step-time error is not the replay's, it is here: tasks ran slower or faster than calibrated.
  // NaN as the replay. The figures by part and by wait below price tasks alike.
  double task_time_error = 0;
  // The typical task's: the median over the processors' tasks after the first step of each one's
  // measured duration over its calibrated cost, minus 1; the median over runs. Far under
  // task_time_error, it says a tail of stalled tasks rather than slower ones (an H100's unsteady
  // 8-partition LayerPipe round, 2026-11-28: -8% here, its tasks' sum +17%; docs/cuda-executor.md).
  // NaN as the replay.
  double median_task_time_error = 0;
  // The same per processor and task kind, keyed "p0 F", "p1 B", "p0 U" (a processor's index in
  // the row's graph, the kind's letters): which tasks ran off their calibrated time. And per link
  // ("l0 X", a link's index in the graph) where the links' threads copy (not a CPU run whose
  // senders copy, TrainingRun::copies_on_senders): its tasks' measured durations over what the
  // prediction holds the link for them, the copy at the link's bandwidth and the latency's round
  // trip (the wake-ups a table timed apart lie outside both; a table without them counts its whole
  // latency, handoffs included, which a measured duration does not hold).
  std::map<std::string, double> task_time_error_by_part;
  // The processors' task time error after the first step by how long a task's processor waited
  // before it in the run (its start less the end of the task it ran before there): "wait < 0.5
  // ms", "wait 0.5-5 ms", "wait 5-20 ms", "wait >= 20 ms", the groups the runs had. On a virtual
  // machine a wait costs the core its caches (docs/executor.md, "Caches lost in a wait"); with a
  // wait curve the price holds what the curve says it costs, and this shows what it misses.
  std::map<std::string, double> task_time_error_by_wait;
  // How busy the other processors are, on average, while one works (0: never, 1: always): the
  // weight of the table taken with P copies at once against the one taken alone in the row's
  // calibration (blend_calibrations; busy_concurrency). Where the P-processor table was timed in
  // a pipeline (Calibration::pipeline_schedule), that share over the pipeline schedule's, at
  // most 1. 0 at P = 1 and without calibrations.
  double co_run_weight = 0;
  // What the row's table compute times were scaled by for the bytes its graph holds against those
  // its table was timed at (Calibration::footprint_factor; the latest round's). 1 where the
  // one-processor table did not measure what a footprint costs.
  double footprint_factor = 1;
  // How far the row's layers were moved from its table's times toward the stash term's far point
  // (Calibration::far_stash_distance_bytes, stash_far_share in calibration.hpp; the latest
  // round's), in [0, 1]: 0 where the row's processors hold their stashes no longer than the run
  // its table was timed in, or the table has no far point (then the footprint term applies).
  double stash_far_share = 0;
  // What the weight-reuse model charged the row's tasks per step (after the first), all processors
  // together, for how warm its order leaves its weights against the table's timed order
  // (schedule/weight_reuse.hpp; the latest round's): negative where warmer. 0 without a reuse curve.
  double weight_reuse_s = 0;
  // What the engine charged the row's tasks per step (after the first), all processors together,
  // for the waits before them in its prediction (schedule/wait_loss.hpp; the latest round's). 0
  // without a wait curve. The task time errors compare each measured task with its cost plus
  // what the wait before it in that run costs by the same curve.
  double wait_loss_s = 0;
  // The step error's 95% confidence half-width (a fraction), distribution-free from the order
  // statistics: of the rounds' ratios with a calibration per round, else of the runs' steps.
  // Infinite with one run.
  double error_ci = 0;
  // Predicted over measured, minus 1 (negative: predicted too fast). With a calibration per
  // round, the median over rounds of that round's prediction over that round's run (paired:
  // a change of the machine's speed between rounds cancels); else over the runs' median.
  double step_error = 0;
  // Per round: the prediction from that round's calibration (one, without a calibration per
  // round) and the run's measured step, in the order taken.
  std::vector<double> predicted_rounds_s, measured_rounds_s;
  std::vector<std::int64_t> predicted_rounds_step_peak_bytes, measured_rounds_step_peak_bytes;  // the same of step peaks
  std::vector<std::int64_t> predicted_rounds_nominal_step_peak_bytes;  // and of the simulated timing's own
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double mean_abs_step_error = 0, max_abs_step_error = 0;
  // Over the rows other than the baseline's own (whose speedup is 1 by definition); 0 with none.
  double mean_abs_speedup_error = 0, max_abs_speedup_error = 0;
  double speedup_error_ci = 0;  // the median of those rows' speedup_error_ci (0: no such row)
  // Per processor count, over the schedules. Schedules whose graphs are one program there
  // (same_program: at P = 1 sequential and 1f1b) are tied in the measured order as in the
  // predicted one: their runs differ by the machine's noise only.
  std::map<int, double> kendall_tau;
  // Per processor count, the groups of two or more schedules that run one program there.
  std::map<int, std::vector<std::vector<std::string>>> same_program_schedules;
  // The same over only the pairs of schedules whose measured order is known (the median of their
  // rounds' step ratios, each round having run both, with its interval clear of 1, each pair's at
  // 5% over the pairs so that all hold at 95% at once), with how many pairs that was (of all): on
  // one processor schedules doing the same work differ by less than the noise, and their
  // measured order is a coin's. Pairs that run one program have no order to know.
  std::map<int, double> separable_kendall_tau;
  std::map<int, std::pair<int, int>> separable_pairs;
  // Per processor count, the pairs of schedules by how their predicted order stands against the
  // measured one (pairs that run one program left out, as kendall_tau leaves them): in that
  // order, against it, predicted the same step (schedules of the same work and bubbles, which
  // tau-b counts against any order the runs give them), or measured the same. With the widest
  // measured gap of a pair predicted the same, over the faster of the two.
  struct PairOrder {
    int in_order = 0, against = 0, predicted_equal = 0, measured_equal = 0;
    double widest_predicted_equal_gap = 0;
  };
  std::map<int, PairOrder> pair_order;
  double noise_floor = 0;  // the median of the rows' measured_spread
  double error_ci = 0;     // the median of the rows' error_ci
  int rounds = 0;          // rounds of runs taken (runs per configuration)
  bool stopped_early = false;  // stop_requested or time_limit_s (ValidationOptions) ended the rounds early
  double mean_abs_replay_error = 0, max_abs_replay_error = 0;  // NaN without task times
  // With calibrations per round (ValidationOptions::calibrate): the last round's one-processor
  // calibrated time of a minibatch over the first round's, minus 1, and the one-processor
  // calibrations' spread (half their range over their median). 0 with one fixed calibration.
  double calibration_drift = 0, calibration_spread = 0;
  int calibrations = 0;  // tables taken by validate (0: the config's own calibration throughout)
  // Per processor count P > 1 with its own calibrations: the median over rounds of how much
  // slower a minibatch's layers ran in the P table (P copies at once, or a P-processor pipeline)
  // than alone (its calibrated step over the same round's one-processor table's, minus 1).
  std::map<int, double> co_run_slowdown;
  // With a calibration per round, per processor count: the tables taken again because they were
  // off their earlier peers (ValidationOptions::table_tolerance, co_run_tolerance; at most
  // machine_retakes more tries each), and those kept off them once their retakes ran out.
  std::map<int, int> retaken_tables, kept_off_tables;
  // The one-processor tables' footprint slowdown the rows were scaled by (the median over the
  // rounds' tables of Calibration::footprint_slowdown); -1 where none measured one.
  double footprint_slowdown = -1;
  // With ValidationOptions::read_machine: the readings taken (two per calibration and per run,
  // warm-up rounds' and retakes included), the calibrations and runs taken again because a reading beside them was
  // off the machine's usual speed, those kept off it once their retakes ran out, the fraction of
  // readings off it when taken, and per CPU the usual reading's seconds (their median).
  struct MachineState {
    int readings = 0, retaken_calibrations = 0, retaken_runs = 0, kept_off_calibrations = 0, kept_off_runs = 0;
    double off_fraction = 0, tolerance = 0;
    std::vector<double> usual_s;
  };
  std::optional<MachineState> machine_state;
};

struct ValidationOptions {
  std::vector<std::string> schedules;
  std::vector<int> processors;
  // Measured runs per configuration; the median step is kept. The runs go round the
  // configurations (run 1 of each, then run 2 of each, ...), so that a machine whose speed drifts
  // slows every configuration alike, and each round takes them in its own order (run_order), so
  // that none always runs first after the calibrations or after the same neighbour.
  int runs = 5;
  // With max_runs > runs: more rounds after `runs`, until every configuration's error_ci, and
  // every row's speedup_error_ci, is at most ci_target, or max_runs rounds are done. 0: exactly
  // `runs`.
  int max_runs = 0;
  double ci_target = 0.05;
  // When set, each round of runs starts with calibrations (calibrate, run every configuration,
  // calibrate, ...: A/B/A/B), and a configuration's prediction is the median of its predictions
  // from every round's. Calibration and measurement then sample the same stretch of the machine's
  // time; one calibration before the runs would carry its moment's speed into every prediction.
  // `calibrate(P)` is asked once per round for every processor count P (1 included, for the
  // baselines), and the configurations with P processors are predicted from its table: an
  // executor whose processors share a machine (CPU threads) times P copies at once there. One
  // more calibration, of one processor, comes first and is not kept (a process's first runs
  // cold). When empty, the config's calibration is used throughout.
  std::function<Calibration(int processors)> calibrate;
  // Called with each kept round's calibrations (round from 0, processor count, the table), for
  // predicting those rounds again offline (`pipetwin validate --tables-out`).
  std::function<void(int round, int processors, const Calibration&)> on_calibration;
  // Called after each kept round's run of each configuration (round from 0, the schedule, its
  // processor count, the graph as that round predicted it, the prediction, the run): to look at
  // a row's tasks, measured beside predicted (`pipetwin validate --traces-out`). Empty: none.
  std::function<void(int round, const std::string& schedule, int processors, const TaskGraph& graph,
                     const Result& predicted, const TrainingRun& measured)>
      on_run;
  // Whole rounds (calibrations and every configuration's run) before the first kept one, not
  // kept: for a machine whose runs speed up over their first rounds (an H100's 8-partition
  // runs did over three, docs/cuda-executor.md). 0: none.
  int warmup_rounds = 0;
  // When set, a reading of the machine's speed (seconds a fixed piece of work takes, per CPU:
  // cpu::time_fixed_work_s) is taken before and after every calibration and run of the rounds
  // (the process's first, warming calibration aside), and one
  // whose two readings are not both within machine_tolerance of the machine's usual speed (the
  // median of the readings so far, MachineReadings) is taken again, up to machine_retakes more
  // times, the last try kept: a host that lends a core's other hyperthread to another guest now and
  // then runs everything 20-40% slower meanwhile, and a table timed in one state predicts runs
  // taken in the other by as much (docs/executor.md, "A machine whose speed jumps"). Empty: no
  // readings.
  std::function<std::vector<double>()> read_machine;
  double machine_tolerance = 0.06;
  int machine_retakes = 2;
  // With a calibration per round, each table is judged by its peers from the fourth round on, and
  // one off them is taken again, up to machine_retakes more times, the last try kept (only slower
  // is judged; 0: none judged). A one-processor table whose calibrated minibatch is more than
  // table_tolerance over the median of the earlier rounds' one-processor tables': on the 2-vCPU
  // AMD EPYC VM such tables came 1.1-1.6x their peers now and then (steps about 20% slower for
  // stretches of 20 to over 100 ms), and they predicted their rounds' runs more than 10% slow twice
  // as often as more than 10% fast; in quiet stretches they spread by 1-2% (docs/executor.md,
  // Validation, "tables judged by their peers"). A table for P >= 2 processors whose co-run slowdown (its calibrated
  // minibatch over the same round's one-processor table's) is more than co_run_tolerance over the
  // earlier rounds' median of that P: there 3 of 30 mlp tables for 2 processors came 1.5x their
  // peers (every layer on both processors 1.6-1.8x its usual time, copies at 11-12 GB/s against
  // 16-18: the host ran the two vCPUs as one core's hyperthreads for a moment) while the ratio
  // spread by up to 20% in noisy hours, the one-processor table's slow stretches in it
  // (docs/executor.md, "Two CPUs on one core").
  double table_tolerance = 0.10;
  double co_run_tolerance = 0.25;
  // How far each processor's tasks are paced off their price, each way, when the step peak is
  // predicted (step_peak_over_phases): the largest of those predictions is compared. A step peak
  // can hang on which of two processors' events comes first (a gradient's arrival against the
  // receiver's forward), a phase that one simulated timing fixes and a run's straying tasks reach
  // in some microbatch of many steps: on resnet8 at P = 2 (pipedream and LayerPipe, 6 rounds
  // each) the runs' step peaks landed on the high side in 9 rounds of 12, the simulated timing's
  // on the low one in 7 (docs/executor.md, "Step peaks over phases"). A fraction in [0, 1); < 0:
  // the row's table's own task spread (Calibration::task_time_spread; 0 where the table has
  // none). 0: the simulated timing alone.
  double peak_phase = -1;
  TrainingOptions training;
  std::function<void(const std::string&)> progress;  // a line per configuration, or empty
  // Asked before each round once a kept round is done: true ends the rounds there, the report
  // over those done (ValidationReport::stopped_early). `pipetwin validate` asks for it on Ctrl-C
  // or SIGTERM, Python's validate() on KeyboardInterrupt, so that a validation cut short still
  // reports. Empty: never.
  std::function<bool()> stop_requested;
  // Seconds from the call: no round from the second kept one on is begun that would end past
  // them, a round taken to last as long as the one before (as stop_requested ends it). 0: none.
  double time_limit_s = 0;
};

using Predictor = std::function<Result(const TaskGraph&)>;

// The order in which round `round` (from 0) runs the configurations, given as consecutive blocks
// of `block_sizes` (a schedule's baseline and its rows): a permutation of 0 .. sum - 1 that keeps
// each block's configurations next to each other, so that a speedup's two runs sample the same
// moment of the machine, with the blocks, and the configurations inside each, shuffled from
// `seed` and the round (Fisher-Yates on std::mt19937_64, whose stream the standard fixes: one
// seed gives the same orders with every standard library).
std::vector<std::size_t> run_order(const std::vector<std::size_t>& block_sizes, std::uint64_t seed, int round);

// How many processors run a task, on average, while one does: the mean over the processors' busy
// time of the number busy at that moment (the integral of N squared over the integral of N, N
// the processors running a task), from `result`'s task times for `graph`. 1 when no two
// processors' tasks overlap, P when all P always run together; 0 without processor tasks.
double busy_concurrency(const TaskGraph& graph, const Result& result);

// `config` names the model and its parameters, microbatches, minibatches and the calibration;
// its schedule and processors are replaced by each configuration's. `run` measures (run_cpu, or
// the CUDA executor).
ValidationReport validate(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                          const Predictor& predict, const Runner& run);
// The rows as JSON objects, one per configuration (`pipetwin validate --json` and Python's
// pipetwin.validate): schedule, processors, baseline, predicted/measured step time, step error,
// the measurement's spread, the replay's step and error, speedups and peak memory.
nlohmann::ordered_json validation_rows_json(const ValidationReport& report);
// The report's summary figures as JSON: mean and largest step and replay errors, Kendall tau per
// P, noise floor and calibration drift (shared by the CLI's --json and Python).
nlohmann::ordered_json validation_summary_json(const ValidationReport& report);

// The 95% confidence half-width of the median of `values`, over the median (distribution-free:
// order statistics of ranks n/2 -+ 1.96 sqrt(n) / 2); infinite for fewer than two values. The ranks
// clamp to the values' range, which holds the median with 1 - 2 / 2^n only: below 95% for fewer
// than 6 values (median_differs_from is exact).
double median_ci_half_width(std::vector<double> values);

// Whether `value` lies outside the exact distribution-free interval of the median of `values` at
// confidence 1 - alpha (order statistics x_(k), x_(n + 1 - k), k from the Binomial(n, 1/2) tail):
// the sign test. False where n values are too few for that confidence (2 / 2^n > alpha).
bool median_differs_from(std::vector<double> values, double value, double alpha);

// One calibration's time for a minibatch's work on one processor (every layer's F, B and U): what
// a drift of the machine's speed changes.
double calibrated_step_s(const Calibration& c);

// `graph` with each task's cost set to its measured duration in `measured` (end minus start, in
// the graph's cycles) and no separate memory traffic: what an engine replays. A transfer also
// keeps its link's latency (the modelled handoffs between threads, outside its measured copy);
// where the link has them apart (LinkInfo::wake_cycles, delivery_cycles), those two alone, the
// rest of the latency (a GPU copy's round trip) being inside the measured transfer.
// With `copies_on_senders` (the run's TrainingRun::copies_on_senders) a transfer its sender's
// thread copied (copied_after) was that thread's time right after the last task it read there:
// that task takes the transfer's measured copy, and the transfer keeps the handoffs alone (as
// charge_copies_to_cores prices it). `gap_s` (the graph's table's Calibration::task_gap_s, where it
// has one) follows every processor task and every copy a sender made, as the cost model charges
// it: what a thread spends between its tasks lies outside their measured times.
TaskGraph with_measured_costs(const TaskGraph& graph, const Result& measured, bool copies_on_senders = false,
                              double gap_s = 0);

// Kendall's tau-b of two orderings of the same items: (concordant - discordant) /
// sqrt((pairs - pairs tied in a) (pairs - pairs tied in b)); NaN when either is all ties (say, one
// schedule, or every schedule equal at P = 1), where no ordering can agree or disagree.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);
// The same over only the pairs (i, j), i < j, that `counted` keeps.
double kendall_tau_where(const std::vector<double>& a, const std::vector<double>& b,
                         const std::function<bool(std::size_t, std::size_t)>& counted);

}  // namespace pipetwin
