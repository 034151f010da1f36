// Predicted against measured, per schedule and processor count (validation.hpp).
#include "pipetwin/exec/validation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include "pipetwin/exec/machine_state.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/step_peak_over_phases.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/same_program.hpp"
#include "pipetwin/schedule/stash_reuse.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/wait_loss.hpp"
#include "pipetwin/schedule/weight_reuse.hpp"
#include "wait_groups.hpp"

namespace pipetwin {
namespace {

// Half the range of `values` over their median.
double half_range_over_median(const std::vector<double>& values) {
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return (*high - *low) / 2 / median_of(values);
}

// Per round, a over b: the rounds' pairs (a and b taken in the same round).
std::vector<double> round_ratios(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (std::size_t r = 0; r < std::min(a.size(), b.size()); ++r) ratios.push_back(a[r] / b[r]);
  return ratios;
}

// What a row's table took from the terms validate applies to it (ValidationRow's figures of the
// same names; the latest calibration's).
struct TableTerms {
  double co_run_weight = 0;
  double footprint_factor = 1;
  double stash_far_share = 0;
  double weight_reuse_s = 0;
  double task_gap_s = 0;  // the gap between tasks (Calibration::task_gap_s), for replays
  double task_time_spread = -1;  // Calibration::task_time_spread (-1: not measured)
};

// One configuration: its schedule and processor count, and per round its prediction, its
// measured step, and the replay of that run's task times.
struct Configuration {
  Configuration(std::string schedule_name, int processor_count, TaskGraph built)
      : schedule(std::move(schedule_name)), processors(processor_count), graph(std::move(built)) {}
  std::string schedule;
  int processors = 0;
  TaskGraph graph;  // built with the latest round's calibration
  std::vector<double> predicted_s;  // per round with a calibration per round, else one
  std::vector<std::int64_t> predicted_peaks, predicted_step_peaks;  // per prediction
  std::vector<std::int64_t> nominal_step_peaks;  // per prediction: its own timing's (step_peak_over_phases)
  double peak_phase = 0;                         // the latest prediction's phase fraction
  Result prediction;  // the latest, kept for ValidationOptions::on_run only
  std::vector<double> steps_s;
  std::vector<double> replay_errors;  // per run: replayed / measured - 1
  std::vector<double> replayed_s;
  std::vector<double> task_time_errors;  // per run: measured processor time / calibrated - 1
  std::vector<double> median_task_time_errors;  // per run: the median task's measured / calibrated - 1
  std::map<std::string, std::vector<double>> part_time_errors;  // the same per processor and kind ("p0 F")
  std::map<std::string, std::vector<double>> wait_time_errors;  // and per wait before the task ("wait 5-20 ms")
  std::vector<std::int64_t> measured_peaks, measured_step_peaks;  // per run
  std::vector<std::int64_t> pool_peaks;      // per run, where the runner has a memory pool
  TableTerms terms;             // the latest calibration's
  double wait_loss_s = 0;       // the latest prediction's (ValidationRow::wait_loss_s)
  // Forgets every round's figures (ValidationOptions::warmup_rounds: those rounds are not kept).
  void forget_rounds() {
    predicted_s.clear();
    predicted_peaks.clear();
    nominal_step_peaks.clear();
    predicted_step_peaks.clear();
    steps_s.clear();
    replay_errors.clear();
    replayed_s.clear();
    task_time_errors.clear();
    median_task_time_errors.clear();
    part_time_errors.clear();
    wait_time_errors.clear();
    measured_peaks.clear();
    measured_step_peaks.clear();
    pool_peaks.clear();
  }
  double measured_s() const { return median_of(steps_s); }
  double spread() const { return half_range_over_median(steps_s); }
  // With a calibration per round, each round's prediction is paired with that round's run: both
  // sampled the machine in the same stretch of time, so a change of its speed between rounds
  // moves both and cancels in their ratio.
  bool paired() const { return predicted_s.size() > 1 && predicted_s.size() == steps_s.size(); }
  // Paired: the median over rounds of prediction over run, minus 1. Else the prediction over
  // the runs' median, minus 1.
  double step_error() const {
    if (paired()) return median_of(round_ratios(predicted_s, steps_s)) - 1;
    return median_of(predicted_s) / measured_s() - 1;
  }
  // The step error's 95% confidence half-width. Paired: the rounds' ratios' median's. Else the
  // measured median's (the prediction is one number).
  double error_ci() const {
    if (paired()) return median_ci_half_width(round_ratios(predicted_s, steps_s));
    return median_ci_half_width(steps_s);
  }
  // Per round, this configuration's predicted speedup over `baseline`'s, over the measured one:
  // each round's runs and its calibration's predictions together. With one prediction for all
  // rounds, that prediction's speedup over each round's measured one.
  std::vector<double> speedup_ratios(const Configuration& baseline) const {
    const std::vector<double> measured = round_ratios(baseline.steps_s, steps_s);
    if (paired() && baseline.paired()) return round_ratios(round_ratios(baseline.predicted_s, predicted_s), measured);
    const double predicted = median_of(baseline.predicted_s) / median_of(predicted_s);
    std::vector<double> ratios;
    for (const double speedup : measured) ratios.push_back(predicted / speedup);
    return ratios;
  }
  // The step peak's error, paired as the step's: a calibration can move LayerPipe's layers
  // between processors, and a round's prediction and run then hold the same graph.
  double step_peak_error() const {
    if (measured_step_peaks.empty()) return std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> predicted(predicted_step_peaks.begin(), predicted_step_peaks.end());
    const std::vector<double> measured(measured_step_peaks.begin(), measured_step_peaks.end());
    if (paired() && predicted.size() == measured.size()) return median_of(round_ratios(predicted, measured)) - 1;
    return median_of(predicted) / median_of(measured) - 1;
  }
};

// Whether a task counts in the task time errors: not the first step's where there are more (it
// pays what a run pays once: on a GPU the pool's cudaMalloc of every tensor shape and cuBLAS's
// first calls, 2.4x the forwards' time of a later step in a resnet56 1f1b run at P = 8 on an
// H100, 2026-11-28), as the step time leaves it out.
bool after_first_step(const TaskGraph& g, const Task& t) { return g.minibatches < 2 || t.minibatch >= 1; }

// The processors' tasks' costs after the first step, summed.
double processor_busy_cycles(const TaskGraph& g) {
  double total = 0;
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::processor && after_first_step(g, t)) total += static_cast<double>(t.cost_cycles);
  }
  return total;
}

// A task's part of the row: its resource and kind, "p0 F" on a processor, "l0 X" on a link.
std::string part_of(const Task& t) {
  return (t.placement == Placement::link ? "l" : "p") + std::to_string(t.resource) + " " + to_string(t.kind);
}

// The median over the processors' tasks after the first step of `measured`'s cost over
// `calibrated`'s (the same graph, each task's cost replaced by its measured duration), minus 1;
// NaN without such tasks.
double median_task_time_error(const TaskGraph& calibrated, const TaskGraph& measured) {
  std::vector<double> ratios;
  for (const auto& t : calibrated.tasks) {
    if (t.placement != Placement::processor || !after_first_step(calibrated, t) || t.cost_cycles <= 0) continue;
    ratios.push_back(static_cast<double>(measured.tasks[static_cast<std::size_t>(t.id)].cost_cycles) /
                     static_cast<double>(t.cost_cycles));
  }
  return ratios.empty() ? std::numeric_limits<double>::quiet_NaN() : median_of(ratios) - 1;
}

// The processors' tasks' costs after the first step, summed per processor and task kind ("p0 F",
// "p1 B", ...).
std::map<std::string, double> processor_busy_cycles_by_part(const TaskGraph& g) {
  std::map<std::string, double> total;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::processor || !after_first_step(g, t)) continue;
    total[part_of(t)] += static_cast<double>(t.cost_cycles);
  }
  return total;
}

// Per link and task kind ("l0 X"): what the prediction holds the link for, over its tasks after
// the first step: each one's copy at the link's bandwidth (cost_cycles) and the latency's round
// trip (latency_cycles less the wake-ups timed apart, which lie outside the link's hold).
std::map<std::string, double> link_held_cycles_by_part(const TaskGraph& g) {
  std::map<std::string, double> total;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::link || !after_first_step(g, t)) continue;
    const LinkInfo& link = g.links[static_cast<std::size_t>(t.resource)];
    const std::int64_t round_trip = std::max<std::int64_t>(0, link.latency_cycles - link.wake_cycles - link.delivery_cycles);
    total[part_of(t)] += static_cast<double>(t.cost_cycles + round_trip);
  }
  return total;
}

// The same parts as measured: the link tasks' durations (a copy and, on a GPU, the wait for it).
std::map<std::string, double> link_measured_cycles_by_part(const TaskGraph& g, const Result& measured) {
  std::map<std::string, double> total;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::link || !after_first_step(g, t)) continue;
    const TaskTiming& time = measured.tasks[static_cast<std::size_t>(t.id)];
    total[part_of(t)] += static_cast<double>(std::max<std::int64_t>(0, time.end_cycles - time.start_cycles));
  }
  return total;
}

// {P: value} as a JSON object keyed by P's digits.
template <typename Value>
nlohmann::ordered_json by_processor_count(const std::map<int, Value>& values) {
  auto object = nlohmann::ordered_json::object();
  for (const auto& [p, value] : values) object[std::to_string(p)] = value;
  return object;
}

double mean_abs(const std::vector<double>& values) {
  double total = 0;
  for (const double v : values) total += std::abs(v);
  return values.empty() ? 0 : total / static_cast<double>(values.size());
}

double max_abs(const std::vector<double>& values) {
  double largest = 0;
  for (const double v : values) largest = std::max(largest, std::abs(v));
  return largest;
}

}  // namespace

double median_ci_half_width(std::vector<double> values) {
  const std::size_t n = values.size();
  if (n < 2) return std::numeric_limits<double>::infinity();
  std::sort(values.begin(), values.end());
  // Distribution-free: the median lies between the order statistics of ranks n/2 -+ 1.96 sqrt(n)/2
  // with about 95% probability (the binomial's normal approximation).
  const double reach = 1.96 / 2 * std::sqrt(static_cast<double>(n));
  const auto lower = static_cast<std::size_t>(std::max(0.0, std::floor(static_cast<double>(n) / 2 - reach)));
  const auto upper = std::min(n - 1, static_cast<std::size_t>(std::ceil(static_cast<double>(n) / 2 + reach)));
  return (values[upper] - values[lower]) / 2 / median_of(values);
}

bool median_differs_from(std::vector<double> values, double value, double alpha) {
  if (!(alpha > 0 && alpha < 1)) throw Error("median_differs_from: alpha must be between 0 and 1");
  const auto n = static_cast<std::int64_t>(values.size());
  // The exact interval [x_(k), x_(n + 1 - k)] (ranks from 1) holds the median unless at most k - 1
  // of the n values fall on one side of it: probability 2 P(B <= k - 1), B ~ Binomial(n, 1/2).
  // The widest k whose probability is at most alpha; none where even the range's 2 / 2^n is more.
  const auto log_half_to_n = static_cast<double>(n) * std::log(0.5);
  double tail = 0;  // P(B <= k - 1)
  std::int64_t k = 0;
  for (std::int64_t j = 0; 2 * j < n; ++j) {
    const double log_choose = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(j) + 1) -
                              std::lgamma(static_cast<double>(n - j) + 1);
    tail += std::exp(log_choose + log_half_to_n);
    if (2 * tail > alpha) break;
    k = j + 1;
  }
  if (k == 0) return false;
  std::sort(values.begin(), values.end());
  return value < values[static_cast<std::size_t>(k - 1)] || value > values[static_cast<std::size_t>(n - k)];
}

double calibrated_step_s(const Calibration& c) {
  double total = 0;
  for (const auto& [name, t] : c.layers) total += t.forward_s + t.fused_backward_s() + t.update_s;
  return total;
}

std::vector<std::size_t> run_order(const std::vector<std::size_t>& block_sizes, std::uint64_t seed, int round) {
  // One stream per round; the multiplier (2^64 over the golden ratio) spreads neighbouring rounds'
  // seeds apart. The modulo's bias, under 2^-50 for fewer than 2^14 items, is no matter.
  std::mt19937_64 generator(seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(round + 1)));
  const auto shuffle = [&](std::vector<std::size_t>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[generator() % i]);
  };
  std::vector<std::size_t> first(block_sizes.size());  // each block's first configuration
  std::vector<std::size_t> blocks(block_sizes.size());
  for (std::size_t b = 0, at = 0; b < block_sizes.size(); at += block_sizes[b], ++b) {
    first[b] = at;
    blocks[b] = b;
  }
  shuffle(blocks);
  std::vector<std::size_t> order;
  for (const std::size_t b : blocks) {
    std::vector<std::size_t> inside(block_sizes[b]);
    for (std::size_t i = 0; i < inside.size(); ++i) inside[i] = first[b] + i;
    shuffle(inside);
    order.insert(order.end(), inside.begin(), inside.end());
  }
  return order;
}

double busy_concurrency(const TaskGraph& graph, const Result& result) {
  if (result.tasks.size() != graph.tasks.size()) {
    throw Error("internal: busy_concurrency needs one time per task (" + std::to_string(graph.tasks.size()) + " tasks, " +
                std::to_string(result.tasks.size()) + " times)");
  }
  std::vector<std::pair<std::int64_t, int>> changes;  // (cycle, +1 start / -1 end)
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    const TaskTiming& time = result.tasks[static_cast<std::size_t>(t.id)];
    if (time.end_cycles <= time.start_cycles) continue;
    changes.emplace_back(time.start_cycles, 1);
    changes.emplace_back(time.end_cycles, -1);
  }
  std::sort(changes.begin(), changes.end());  // at one cycle, ends before starts
  double busy = 0, busy_squared = 0;
  int running = 0;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    running += changes[i].second;
    if (i + 1 < changes.size()) {
      const auto span = static_cast<double>(changes[i + 1].first - changes[i].first);
      busy += running * span;
      busy_squared += static_cast<double>(running) * running * span;
    }
  }
  return busy > 0 ? busy_squared / busy : 0;
}

TaskGraph with_measured_costs(const TaskGraph& graph, const Result& measured, bool copies_on_senders, double gap_s) {
  if (measured.tasks.size() != graph.tasks.size()) {
    throw Error("internal: a replay needs one measured time per task (" + std::to_string(graph.tasks.size()) +
                " tasks, " + std::to_string(measured.tasks.size()) + " times)");
  }
  if (!(gap_s >= 0 && std::isfinite(gap_s))) throw Error("internal: a replay's gap between tasks must be seconds >= 0");
  const auto gap_cycles = static_cast<std::int64_t>(std::ceil(gap_s * graph.clock_hz - 1e-9));
  TaskGraph replay = graph;
  replay.wait_loss.clear();  // the measured durations hold what the waits cost
  // Where the calibration timed the handoffs apart (LinkInfo::wake_cycles, delivery_cycles), they
  // are what lies outside a measured transfer; the rest of the latency (a GPU copy's round trip,
  // which its task waits for) is inside it.
  for (auto& link : replay.links) {
    if (link.wake_cycles + link.delivery_cycles > 0) link.latency_cycles = link.wake_cycles + link.delivery_cycles;
  }
  for (auto& t : replay.tasks) {
    const TaskTiming& time = measured.tasks[static_cast<std::size_t>(t.id)];
    t.cost_cycles = std::max<std::int64_t>(0, time.end_cycles - time.start_cycles);
    t.memory_cycles = 0;  // measured durations already hold whatever the memory cost
    // A transfer's measured copy plus its link's latency: the handoffs to the link's thread and on
    // to the consumer's, which the copy's own start and end do not contain.
    if (t.placement == Placement::link) t.cost_cycles += replay.links[static_cast<std::size_t>(t.resource)].latency_cycles;
    if (t.placement == Placement::processor) t.cost_cycles += gap_cycles;
  }
  if (!copies_on_senders) return replay;
  // A transfer its sender copied: the copy is the sender's time, right after the task it was
  // copied after (as the cost model charges it, charge_copies_to_cores), and the transfer the
  // reader's wake-up.
  const std::vector<std::int32_t> after = copied_after(graph);
  for (const auto& t : graph.tasks) {
    const std::int32_t last = after[static_cast<std::size_t>(t.id)];
    if (last < 0) continue;
    const std::int64_t copy_cycles = replay.tasks[static_cast<std::size_t>(t.id)].cost_cycles -
                                     replay.links[static_cast<std::size_t>(t.resource)].latency_cycles;
    replay.tasks[static_cast<std::size_t>(last)].cost_cycles += copy_cycles + gap_cycles;  // the gap after the copy too
    replay.tasks[static_cast<std::size_t>(t.id)].cost_cycles -= copy_cycles;
  }
  return replay;
}

// `graph` with each processor task's cost plus what the wait before it in `measured` costs by the
// graph's wait loss (wait_loss.hpp), and no wait loss left: each task's price as the run went,
// which its measured duration is compared with.
TaskGraph with_wait_charges(const TaskGraph& graph, const Result& measured) {
  TaskGraph priced = graph;
  if (graph.wait_loss.empty()) return priced;
  const std::vector<std::int64_t> charges = wait_charges_cycles(graph, measured.tasks);
  for (auto& t : priced.tasks) t.cost_cycles += charges[static_cast<std::size_t>(t.id)];
  priced.wait_loss.clear();
  return priced;
}

// What the engine charged `graph`'s tasks for the waits before them in `predicted` (its own
// timing), per step after the first, in seconds: the processors together.
double wait_loss_per_step_s(const TaskGraph& graph, const Result& predicted) {
  if (graph.wait_loss.empty() || predicted.tasks.size() != graph.tasks.size() || graph.minibatches < 2) return 0;
  const std::vector<std::int64_t> charges = wait_charges_cycles(graph, predicted.tasks);
  double total = 0;
  for (const auto& t : graph.tasks) {
    if (after_first_step(graph, t)) total += static_cast<double>(charges[static_cast<std::size_t>(t.id)]);
  }
  return total / graph.clock_hz / static_cast<double>(graph.minibatches - 1);
}

nlohmann::ordered_json validation_rows_json(const ValidationReport& report) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    rows.push_back({{"schedule", row.schedule}, {"processors", row.processors}, {"baseline", row.baseline},
                    {"predicted_step_s", row.predicted_step_s}, {"measured_step_s", row.measured_step_s},
                    {"step_error", row.step_error}, {"error_ci", row.error_ci},
                    {"measured_spread", row.measured_spread},
                    {"replayed_step_s", row.replayed_step_s}, {"replay_error", row.replay_error},
                    {"task_time_error", row.task_time_error},
                    {"median_task_time_error", row.median_task_time_error},
                    {"task_time_error_by_part", row.task_time_error_by_part},
                    {"task_time_error_by_wait", row.task_time_error_by_wait},
                    {"co_run_weight", row.co_run_weight},
                    {"footprint_factor", row.footprint_factor},
                    {"stash_far_share", row.stash_far_share},
                    {"weight_reuse_s", row.weight_reuse_s},
                    {"wait_loss_s", row.wait_loss_s},
                    {"predicted_speedup", row.predicted_speedup},
                    {"measured_speedup", row.measured_speedup},
                    {"speedup_error", row.speedup_error},
                    {"speedup_error_ci", row.speedup_error_ci},
                    {"predicted_peak_memory_bytes", row.predicted_peak_bytes},
                    {"measured_peak_memory_bytes", row.measured_peak_bytes},
                    {"measured_peak_memory_max_bytes", row.measured_peak_max_bytes},
                    {"predicted_step_peak_memory_bytes", row.predicted_step_peak_bytes},
                    {"predicted_nominal_step_peak_memory_bytes", row.predicted_nominal_step_peak_bytes},
                    {"peak_phase", row.peak_phase},
                    {"measured_step_peak_memory_bytes", row.measured_step_peak_bytes},
                    {"step_peak_memory_error", row.step_peak_error},
                    {"measured_pool_peak_bytes", row.measured_pool_peak_bytes},
                    {"predicted_rounds_s", row.predicted_rounds_s},
                    {"measured_rounds_s", row.measured_rounds_s},
                    {"predicted_rounds_step_peak_bytes", row.predicted_rounds_step_peak_bytes},
                    {"predicted_rounds_nominal_step_peak_bytes", row.predicted_rounds_nominal_step_peak_bytes},
                    {"measured_rounds_step_peak_bytes", row.measured_rounds_step_peak_bytes}});
  }
  return rows;
}

nlohmann::ordered_json validation_summary_json(const ValidationReport& report) {
  nlohmann::ordered_json j;
  j["mean_abs_step_error"] = report.mean_abs_step_error;
  j["max_abs_step_error"] = report.max_abs_step_error;
  j["mean_abs_speedup_error"] = report.mean_abs_speedup_error;
  j["max_abs_speedup_error"] = report.max_abs_speedup_error;
  j["speedup_error_ci"] = report.speedup_error_ci;
  j["mean_abs_replay_error"] = report.mean_abs_replay_error;
  j["max_abs_replay_error"] = report.max_abs_replay_error;
  j["kendall_tau"] = by_processor_count(report.kendall_tau);
  j["same_program_schedules"] = nlohmann::ordered_json::object();
  for (const auto& [p, groups] : report.same_program_schedules) j["same_program_schedules"][std::to_string(p)] = groups;
  j["separable_kendall_tau"] = nlohmann::ordered_json::object();
  for (const auto& [p, t] : report.separable_kendall_tau) {
    const auto& [count, pairs] = report.separable_pairs.at(p);
    j["separable_kendall_tau"][std::to_string(p)] = {{"tau", t}, {"pairs", count}, {"of", pairs}};
  }
  j["pair_order"] = nlohmann::ordered_json::object();
  for (const auto& [p, o] : report.pair_order) {
    j["pair_order"][std::to_string(p)] = {{"in_order", o.in_order},
                                          {"against", o.against},
                                          {"predicted_equal", o.predicted_equal},
                                          {"measured_equal", o.measured_equal},
                                          {"widest_predicted_equal_gap", o.widest_predicted_equal_gap}};
  }
  j["noise_floor"] = report.noise_floor;
  j["error_ci"] = report.error_ci;
  j["rounds"] = report.rounds;
  j["stopped_early"] = report.stopped_early;
  j["calibrations"] = report.calibrations;
  j["calibration_drift"] = report.calibration_drift;
  j["calibration_spread"] = report.calibration_spread;
  j["co_run_slowdown"] = by_processor_count(report.co_run_slowdown);
  j["footprint_slowdown"] = report.footprint_slowdown;
  j["retaken_tables"] = by_processor_count(report.retaken_tables);
  j["kept_off_tables"] = by_processor_count(report.kept_off_tables);
  if (report.machine_state) {
    const ValidationReport::MachineState& m = *report.machine_state;
    j["machine_state"] = {{"readings", m.readings},
                          {"tolerance", m.tolerance},
                          {"off_fraction", m.off_fraction},
                          {"retaken_calibrations", m.retaken_calibrations},
                          {"retaken_runs", m.retaken_runs},
                          {"kept_off_calibrations", m.kept_off_calibrations},
                          {"kept_off_runs", m.kept_off_runs},
                          {"usual_s", m.usual_s}};
  }
  return j;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  return kendall_tau_where(a, b, [](std::size_t, std::size_t) { return true; });
}

double kendall_tau_where(const std::vector<double>& a, const std::vector<double>& b,
                         const std::function<bool(std::size_t, std::size_t)>& counted) {
  std::int64_t concordant = 0, discordant = 0, pairs = 0, tied_a = 0, tied_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      if (!counted(i, j)) continue;
      const double product = (a[i] - a[j]) * (b[i] - b[j]);
      ++pairs;
      tied_a += a[i] == a[j];
      tied_b += b[i] == b[j];
      if (product > 0) ++concordant;
      if (product < 0) ++discordant;
    }
  }
  const double denominator = std::sqrt(static_cast<double>(pairs - tied_a) * static_cast<double>(pairs - tied_b));
  if (denominator == 0) return std::numeric_limits<double>::quiet_NaN();  // one ordering is all ties
  return static_cast<double>(concordant - discordant) / denominator;
}

ValidationReport validate(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                          const Predictor& predict, const Runner& run) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point began = Clock::now();
  if (options.schedules.empty()) throw Error("validate: give at least one schedule");
  if (options.processors.empty()) throw Error("validate: give at least one processor count");
  if (options.runs < 1) throw Error("validate: runs must be at least 1");
  for (const int p : options.processors) {
    if (p < 1) throw Error("validate: processor counts must be at least 1, got " + std::to_string(p));
  }
  if (options.max_runs != 0 && options.max_runs < options.runs) {
    throw Error("validate: the most runs (" + std::to_string(options.max_runs) + ") must be at least the runs (" +
                std::to_string(options.runs) + "), or 0");
  }
  if (!(options.table_tolerance >= 0)) throw Error("validate: the table tolerance must be at least 0 (0: none judged)");
  if (!(options.co_run_tolerance >= 0)) throw Error("validate: the co-run tolerance must be at least 0 (0: none judged)");
  if (!(options.time_limit_s >= 0)) throw Error("validate: the time limit must be at least 0 seconds (0: none)");
  if ((options.read_machine || options.table_tolerance > 0 || options.co_run_tolerance > 0) && options.machine_retakes < 0) {
    throw Error("validate: machine retakes must be at least 0");
  }
  const int most_runs = std::max(options.runs, options.max_runs);
  const ScheduleRequest request = make_request(config);
  // The machine's speed read before and after each kept calibration and run (read_machine): a
  // calibration or run with a reading off the usual speed beside it is taken again.
  std::optional<MachineReadings> readings;
  if (options.read_machine) readings.emplace(options.machine_tolerance);
  ValidationReport::MachineState machine;
  const auto percent = [](double fraction) { return std::to_string(static_cast<int>(std::lround(100 * fraction))) + "%"; };
  // `work` (a run when `is_run`, a calibration otherwise; `what` names it) between two readings,
  // again while either is off the usual speed, up to machine_retakes more times.
  const auto between_readings = [&](const std::string& what, bool is_run, const std::function<void()>& work) {
    if (!readings) {
      work();
      return;
    }
    for (int attempt = 0;; ++attempt) {
      const double before = readings->add(options.read_machine());
      work();
      const double after = readings->add(options.read_machine());
      const double off = std::max(before, after);
      if (readings->as_usual(off)) return;
      if (attempt == options.machine_retakes) {
        ++(is_run ? machine.kept_off_runs : machine.kept_off_calibrations);
        if (options.progress) options.progress(what + ": the machine was still " + percent(off) + " off its usual speed; kept");
        return;
      }
      ++(is_run ? machine.retaken_runs : machine.retaken_calibrations);
      if (options.progress) {
        options.progress(what + ": the machine ran " + percent(off) + " off its usual speed beside it; again (" +
                         std::to_string(attempt + 1) + " of at most " + std::to_string(options.machine_retakes) + ")");
      }
    }
  };
  // The latest round's calibration per processor count (the config's own throughout without
  // `calibrate`).
  std::map<int, GraphConfig> calibrated;
  std::vector<int> counts = options.processors;
  counts.push_back(1);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  // A table given as a file, read once: its figures are the rows' (the footprint scaling below).
  GraphConfig given = config;
  if (!given.calibration && !given.calibration_file.empty()) {
    given.calibration = std::make_shared<const Calibration>(load_calibration(given.calibration_file));
  }
  for (const int p : counts) calibrated[p] = given;
  ValidationReport report;
  std::map<int, std::vector<double>> calibrated_steps_s;  // per P, per round
  // Each round's one-processor table's footprint slowdown (Calibration::footprint_slowdown), for
  // their median: the figure is the ratio of two runs of one profile, and a change of the
  // machine's speed between them carries whole into it (mlp on a 2-vCPU AMD EPYC VM: 0 in about
  // half the rounds, 0.09-0.22 in others, where gpipe's runs measured as sequential's;
  // docs/executor.md, "A machine whose speed jumps").
  std::vector<double> footprint_slowdowns;
  // Rounds counted from 0 with the warm-up ones first: "warm-up round 2/3", "round 1/10".
  const int warmup = std::max(0, options.warmup_rounds);
  const auto round_label = [&](int round) {
    return round < warmup ? "warm-up round " + std::to_string(round + 1) + "/" + std::to_string(warmup)
                          : "round " + std::to_string(round - warmup + 1) + "/" + std::to_string(most_runs);
  };
  // How much slower than its earlier peers a round's table for p processors ran its layers, as a
  // fraction: a one-processor table's calibrated minibatch over the earlier rounds' median, a
  // table for more processors' co-run slowdown (its minibatch over this round's one-processor
  // table's) over theirs; 0 with fewer than three earlier rounds to judge by.
  const auto table_off = [&](int p, double step_s) {
    const std::vector<double>& alone = calibrated_steps_s[1];
    const std::vector<double>& earlier = calibrated_steps_s[p];
    constexpr std::size_t kLeastPeers = 3;
    if (earlier.size() < kLeastPeers) return 0.0;
    if (p == 1) return step_s / median_of(earlier) - 1;
    if (alone.size() != earlier.size() + 1) return 0.0;
    std::vector<double> ratios;
    for (std::size_t r = 0; r < earlier.size(); ++r) ratios.push_back(earlier[r] / alone[r]);
    return step_s / alone.back() / median_of(ratios) - 1;
  };
  // Calibrates for p processors between readings, and again while the table is off its peers
  // (table_off over ValidationOptions::table_tolerance or co_run_tolerance), up to machine_retakes
  // more times, the last try kept; its calibrated minibatch.
  const auto take_table = [&](int p, const std::string& what) {
    const double tolerance = p == 1 ? options.table_tolerance : options.co_run_tolerance;
    const std::string peers = p == 1 ? "the earlier rounds' one-processor tables"
                                     : "the earlier rounds' tables for " + std::to_string(p) +
                                           " processors against their one-processor tables";
    for (int attempt = 0;; ++attempt) {
      between_readings(what, false, [&] { calibrated[p].calibration = std::make_shared<const Calibration>(options.calibrate(p)); });
      const double step_s = calibrated_step_s(*calibrated[p].calibration);
      if (!(tolerance > 0)) return step_s;
      const double off = table_off(p, step_s);
      if (off <= tolerance) return step_s;
      if (attempt == options.machine_retakes) {
        ++report.kept_off_tables[p];
        if (options.progress) options.progress(what + ": its layers still " + percent(off) + " slower than " + peers + "; kept");
        return step_s;
      }
      ++report.retaken_tables[p];
      if (options.progress) {
        options.progress(what + ": its layers ran " + percent(off) + " slower than " + peers + "; again (" +
                         std::to_string(attempt + 1) + " of at most " + std::to_string(options.machine_retakes) + ")");
      }
    }
  };
  auto recalibrate = [&](int round) {
    for (const int p : counts) {
      const std::string what =
          round_label(round) + ": calibrating" + (p > 1 ? " for " + std::to_string(p) + " processors" : std::string());
      if (options.progress) options.progress(what);
      calibrated_steps_s[p].push_back(take_table(p, what));
      if (p == 1 && calibrated[p].calibration->footprint_slowdown >= 0) {
        footprint_slowdowns.push_back(calibrated[p].calibration->footprint_slowdown);
      }
      ++report.calibrations;
      if (options.on_calibration && round >= warmup) options.on_calibration(round - warmup, p, *calibrated[p].calibration);
    }
  };
  if (options.calibrate) {
    // A process's first calibration runs cold (oneDNN builds its kernels, the heap grows): on the
    // 2-vCPU AVX-512 machine the first round's table predicted mlp's steps 1.2-1.9x slower than
    // the later rounds' did. One calibration first, not kept, warms the process.
    if (options.progress) options.progress("warming up: one calibration, not kept");
    static_cast<void>(options.calibrate(1));
    recalibrate(0);
  }
  auto graph_of = [&](GraphConfig c, const std::string& schedule, int processors) {
    c.schedule = schedule;
    c = without_other_schedules_params(c);
    if (processors == 1) c = single_replica(c);  // the baseline: one replica on one processor
    c.processors = processors;
    TaskGraph graph = make_graph(c);
    validate_or_throw(graph);
    return graph;
  };
  // With a table taken alone and one taken with P copies at once, the row's tasks get the table
  // for as busy as the other processors are while they work: predicted once with the table taken
  // alone, the processors' busy concurrency c weighs the two, (c - 1) / (P - 1) (0: a sequential
  // pipeline, one processor at a time; 1: every processor always busy). A table timed in a
  // P-processor pipeline (Calibration::pipeline_schedule) was timed with the other processors
  // as busy as that schedule keeps them, not always: the row's weight is its overlap over that
  // schedule's. Where the table measured how its layers' times grew with their tasks' overlap
  // (Calibration::co_run_slope s, at the run's mean share o), the row takes the pipeline's table
  // times (1 + s o w) / (1 + s o), w its weight: what the pipeline costs a layer with nothing
  // beside it (data crossing cores, each processor's caches) stays. Otherwise it takes the table
  // taken alone and the pipeline's mixed by w, at most 1 (docs/executor.md, "As busy as the others
  // are"). Since the processors spin rather than sleep in their waits, a sequential pipeline's
  // tasks at P = 2 ran 5.7 and 7.0% under the 1f1b pipeline's table (resnet8 and mlp,
  // 2026-11-25, that table's layers 6.6% and 5.0% slower than alone).
  const auto overlap_alone = [&](const std::string& schedule, int processors) {
    const TaskGraph alone_graph = graph_of(calibrated.at(1), schedule, processors);
    return std::clamp((busy_concurrency(alone_graph, predict(alone_graph)) - 1) / (processors - 1), 0.0, 1.0);
  };
  // The config (its table) a row's graph is built from, as above.
  auto choose_table = [&](const std::string& schedule, int processors, double* co_run_weight) -> GraphConfig {
    const GraphConfig& together = calibrated.at(processors);
    const GraphConfig& alone = calibrated.at(1);
    if (co_run_weight != nullptr) *co_run_weight = 0;
    if (processors == 1 || !together.calibration || !alone.calibration || together.calibration == alone.calibration) {
      return together;
    }
    double weight = overlap_alone(schedule, processors);
    const Calibration& pipeline = *together.calibration;
    if (!pipeline.pipeline_schedule.empty()) {  // timed where a pipeline runs the layers
      const double table_overlap =
          pipeline.pipeline_schedule == schedule ? weight : overlap_alone(pipeline.pipeline_schedule, processors);
      weight = table_overlap > 0 ? std::min(1.0, weight / table_overlap) : 1.0;
      if (pipeline.co_run_slope >= 0 && pipeline.co_run_share >= 0) {
        if (co_run_weight != nullptr) *co_run_weight = weight;
        const double s = pipeline.co_run_slope, o = pipeline.co_run_share;
        GraphConfig scaled = together;
        scaled.calibration = std::make_shared<const Calibration>(with_compute_scaled(pipeline, (1 + s * o * weight) / (1 + s * o)));
        return scaled;
      }
    }
    if (co_run_weight != nullptr) *co_run_weight = weight;
    if (weight == 1) return together;
    GraphConfig mixed = together;
    mixed.calibration =
        std::make_shared<const Calibration>(blend_calibrations(*alone.calibration, *together.calibration, weight));
    return mixed;
  };
  // Where the one-processor table measured what a larger footprint costs the compute
  // (Calibration::footprint_slowdown), the row's table takes it by the bytes its graph holds, its
  // largest processor's predicted step peak, against the footprint that table was timed at:
  // compute times times Calibration::footprint_factor. On the 2-vCPU AVX-512 machine lenet5's
  // one-processor gpipe ran 0-4% slower than sequential holding 6 MB and 11-14% holding 22 MB;
  // at 16 microbatches the term took gpipe's rows from -7.4% (P = 1) and -3.7% (P = 2) to within
  // 1%. The largest processor's peak, not the processors' peaks together: with the sum, mlp's
  // gpipe at P = 2 was predicted 6.6% slow (each core has an L2 of its own), with the largest
  // 1.4% (docs/executor.md, "What a footprint costs").
  // What the weight-reuse model charged a graph's tasks (charge_weight_reuse, in make_graph) per
  // step after the first, all processors together.
  const auto weight_reuse_per_step_s = [&](const TaskGraph& graph, const Calibration* calibration) {
    if (calibration == nullptr) return 0.0;
    return weight_reuse_charge_per_minibatch_s(graph, request.network, *calibration, 1, [](const Task&) { return true; });
  };
  // Where the row's table has the stash term's far point (a CPU table timed in a pipeline,
  // Calibration::far_stash_distance_bytes), its layers are moved toward it by the row's
  // stash_far_share (with_far_share) in place of the footprint term, which measures a footprint
  // by the largest step peak and cannot see that a pipeline's order holds its stashes longer
  // (1f1b's at P = 2 on resnet8 held more than sequential's at P = 1 and ran warmer;
  // docs/executor.md, "Where gpipe's time at P = 2 goes").
  const auto stash_share = [&](const TaskGraph& graph, const Calibration& table) {
    const std::vector<StashReuse> reuse = stash_reuse(graph, request.network);
    std::vector<double> distance(reuse.size(), -1.0), timed(reuse.size(), -1.0);
    for (std::size_t p = 0; p < reuse.size(); ++p) distance[p] = reuse[p].distance_bytes;
    // Per processor, the timed distance of the layers its forwards run, weighted by their stashes.
    const std::vector<std::vector<std::int32_t>> layers_of = forward_layers_by_processor(graph);
    for (std::size_t p = 0; p < reuse.size() && p < layers_of.size(); ++p) {
      double weighted = 0, weights = 0;
      for (const std::int32_t l : layers_of[p]) {
        const Layer& layer = request.network.layers[static_cast<std::size_t>(l)];
        const auto it = table.layers.find(layer.name);
        if (it == table.layers.end() || it->second.timed_stash_distance_bytes < 0) continue;
        const double weight = static_cast<double>(std::max<std::int64_t>(1, layer.stash_bytes));
        weighted += weight * it->second.timed_stash_distance_bytes;
        weights += weight;
      }
      if (weights > 0) timed[p] = weighted / weights;
    }
    return stash_far_share(distance, timed, static_cast<double>(table.far_stash_distance_bytes), stash_distance_floor_bytes(table));
  };
  auto build = [&](const std::string& schedule, int processors, TableTerms* terms = nullptr) {
    TableTerms unused;
    TableTerms& out = terms != nullptr ? *terms : unused;
    out = TableTerms{};
    GraphConfig chosen = choose_table(schedule, processors, &out.co_run_weight);
    TaskGraph graph = graph_of(chosen, schedule, processors);
    out.task_gap_s = chosen.calibration ? chosen.calibration->charged_task_gap_s() : 0.0;
    out.task_time_spread = chosen.calibration ? chosen.calibration->task_time_spread : -1.0;
    out.weight_reuse_s = weight_reuse_per_step_s(graph, chosen.calibration.get());
    if (chosen.calibration && chosen.calibration->far_stash_distance_bytes > 0) {
      out.stash_far_share = stash_share(graph, *chosen.calibration);
      if (out.stash_far_share == 0) return graph;
      chosen.calibration = std::make_shared<const Calibration>(with_far_share(*chosen.calibration, out.stash_far_share));
      return graph_of(chosen, schedule, processors);
    }
    const auto& alone = calibrated.at(1).calibration;
    if (!alone || !chosen.calibration || chosen.calibration->timed_footprint_bytes <= 0) return graph;
    Calibration pooled = *alone;  // its slowdown the median over the rounds so far
    if (!footprint_slowdowns.empty()) pooled.footprint_slowdown = median_of(footprint_slowdowns);
    if (!(pooled.footprint_slowdown > 0)) return graph;
    const double factor =
        pooled.footprint_factor(max_peak(predict(graph).step_compute_peak_memory_bytes), chosen.calibration->timed_footprint_bytes);
    out.footprint_factor = factor;
    if (factor == 1) return graph;
    chosen.calibration = std::make_shared<const Calibration>(with_compute_scaled(*chosen.calibration, factor));
    return graph_of(chosen, schedule, processors);
  };
  // Every configuration: per schedule its one-processor baseline (this schedule, or sequential
  // where it cannot be built on one processor: only building falls back; an error while running,
  // out of memory or divergence, is the user's to see), then each processor count.
  std::vector<Configuration> configurations;
  struct RowPlan {
    std::string schedule, baseline;
    int processors;
    std::size_t one, at;  // indices of the baseline's and the row's configurations
  };
  std::vector<RowPlan> plans;
  std::vector<std::size_t> block_sizes;  // per schedule: its configurations, consecutive
  for (const auto& schedule : options.schedules) {
    std::string baseline = schedule;
    TaskGraph one_graph;
    TableTerms one_terms;
    try {
      one_graph = build(schedule, 1, &one_terms);
    } catch (const Error&) {
      baseline = "sequential";
      one_graph = build("sequential", 1, &one_terms);
    }
    const std::size_t one = configurations.size();
    configurations.emplace_back(baseline, 1, std::move(one_graph));
    configurations.back().terms = one_terms;
    for (const int p : options.processors) {
      std::size_t at = one;
      if (p != 1 || baseline != schedule) {
        at = configurations.size();
        TableTerms terms;
        TaskGraph graph = build(schedule, p, &terms);
        configurations.emplace_back(schedule, p, std::move(graph));
        configurations.back().terms = terms;
      }
      plans.push_back({schedule, baseline, p, one, at});
    }
    block_sizes.push_back(configurations.size() - one);
  }
  auto predict_all = [&] {
    for (auto& c : configurations) {
      const Result predicted = predict(c.graph);
      c.predicted_s.push_back(predicted.iteration_s);
      // A peak can hang on timing (how far ahead forwards run): the median over the rounds, as
      // the measured peak is the median over the runs.
      c.predicted_peaks.push_back(max_peak(predicted.peak_memory_bytes));
      // A step peak that hangs on a race between processors: the largest over the phases their
      // tasks' spread can give them (step_peak_over_phases.hpp).
      c.peak_phase = options.peak_phase >= 0 ? options.peak_phase : std::max(0.0, c.terms.task_time_spread);
      c.nominal_step_peaks.push_back(max_peak(predicted.step_peak_memory_bytes));
      c.predicted_step_peaks.push_back(step_peak_over_phases(c.graph, predict, c.nominal_step_peaks.back(), c.peak_phase));
      c.wait_loss_s = wait_loss_per_step_s(c.graph, predicted);
      if (options.on_run) c.prediction = predicted;
    }
  };
  // Rounds until --runs are done and, with max_runs, until every configuration's error and every
  // row's speedup error are known within the target (or max_runs are done).
  const auto settled = [&] {
    for (const auto& c : configurations) {
      if (!(c.error_ci() <= options.ci_target)) return false;
    }
    for (const auto& plan : plans) {
      if (plan.at == plan.one) continue;
      const auto ratios = configurations[plan.at].speedup_ratios(configurations[plan.one]);
      if (!(median_ci_half_width(ratios) <= options.ci_target)) return false;
    }
    return true;
  };
  // Before a round from the second kept one on: whether to end the rounds there, as asked
  // (stop_requested) or because another round, as long as the last, would end past the limit.
  Clock::time_point round_began = began;
  const auto stop_here = [&] {
    if (options.stop_requested && options.stop_requested()) return true;
    if (options.time_limit_s <= 0) return false;
    const Clock::time_point now = Clock::now();
    const double elapsed_s = std::chrono::duration<double>(now - began).count();
    const double round_s = std::chrono::duration<double>(now - round_began).count();
    if (elapsed_s + round_s <= options.time_limit_s) return false;
    if (options.progress) {
      const auto whole_s = [](double seconds) {  // whole seconds; a limit under one second as given
        if (seconds >= 1) return std::to_string(std::llround(seconds));
        std::ostringstream text;
        text << std::setprecision(2) << seconds;
        return text.str();
      };
      options.progress("time limit " + whole_s(options.time_limit_s) + " s: another round (about " + whole_s(round_s) +
                       " s) would end past it at " + whole_s(elapsed_s) + " s; the " + std::to_string(report.rounds) +
                       (report.rounds == 1 ? " round" : " rounds") + " done are reported");
    }
    return true;
  };
  for (int r = 0; r < warmup + most_runs && (r - warmup < options.runs || !settled()); ++r) {
    const int kept = r - warmup;  // the kept round's index; negative while warming up
    if (kept >= 1 && stop_here()) {
      report.stopped_early = true;
      break;
    }
    round_began = Clock::now();
    if (kept == 0 && warmup > 0) {  // the warm-up rounds' figures go
      for (auto& c : configurations) c.forget_rounds();
      calibrated_steps_s.clear();
      footprint_slowdowns.clear();
    }
    if (kept >= 0) ++report.rounds;
    if (r == 0 || options.calibrate || kept == 0) {  // the first kept round predicts again
      if (r > 0 && options.calibrate) {
        recalibrate(r);
        for (auto& c : configurations) {
          c.graph = build(c.schedule, c.processors, &c.terms);
        }
      }
      predict_all();
    }
    for (const std::size_t index : run_order(block_sizes, options.training.seed, kept >= 0 ? kept : r)) {
      Configuration& c = configurations[index];
      const std::string what = (kept >= 0 ? "run " + std::to_string(kept + 1) + "/" + std::to_string(most_runs)
                                          : "warm-up run " + std::to_string(r + 1) + "/" + std::to_string(warmup)) +
                               ": " + c.schedule + " on " + std::to_string(c.processors) +
                               (c.processors == 1 ? " processor" : " processors");
      if (options.progress) options.progress(what);
      const BatchSampler sampler = graph_sampler(data, c.graph, request.network, options.training.seed);  // its replicas' batches
      TrainingRun measured;
      between_readings(what, true, [&] { measured = run(c.graph, request.network, sampler, options.training); });
      c.steps_s.push_back(measured.result.iteration_s);
      c.measured_peaks.push_back(max_peak(measured.result.peak_memory_bytes));
      c.measured_step_peaks.push_back(max_peak(measured.result.step_peak_memory_bytes));
      if (options.on_run && kept >= 0) options.on_run(kept, c.schedule, c.processors, c.graph, c.prediction, measured);
      if (!measured.device_pool_peak_bytes.empty()) {
        std::int64_t pool = 0;
        for (const auto& [gpu, bytes] : measured.device_pool_peak_bytes) pool = std::max(pool, bytes);
        c.pool_peaks.push_back(pool);
      }
      if (measured.result.tasks.size() == c.graph.tasks.size() && measured.result.iteration_s > 0) {
        const TaskGraph replay = with_measured_costs(c.graph, measured.result, measured.copies_on_senders, c.terms.task_gap_s);
        const double replayed_s = predict(replay).iteration_s;
        c.replayed_s.push_back(replayed_s);
        c.replay_errors.push_back(replayed_s / measured.result.iteration_s - 1);
        // Each task's price as this run went: its cost and what the wait before it here costs.
        const TaskGraph priced = with_wait_charges(c.graph, measured.result);
        c.task_time_errors.push_back(processor_busy_cycles(replay) / processor_busy_cycles(priced) - 1);
        const double median_error = median_task_time_error(priced, replay);
        if (std::isfinite(median_error)) c.median_task_time_errors.push_back(median_error);
        auto calibrated_parts = processor_busy_cycles_by_part(priced);
        auto measured_parts = processor_busy_cycles_by_part(replay);
        if (!measured.copies_on_senders) {  // a sender's copy is priced in its task, not on the link
          calibrated_parts.merge(link_held_cycles_by_part(c.graph));
          measured_parts.merge(link_measured_cycles_by_part(c.graph, measured.result));
        }
        for (const auto& [part, cycles] : measured_parts) {
          const auto it = calibrated_parts.find(part);
          if (it != calibrated_parts.end() && it->second > 0) c.part_time_errors[part].push_back(cycles / it->second - 1);
        }
        // The same tasks grouped by the wait before each in this run.
        const std::vector<std::string> groups = exec::wait_groups(c.graph, measured.result);
        std::map<std::string, std::pair<double, double>> by_wait;  // per group: calibrated, measured cycles
        for (const auto& t : priced.tasks) {
          const std::string& group = groups[static_cast<std::size_t>(t.id)];
          if (group.empty() || !after_first_step(priced, t)) continue;
          by_wait[group].first += static_cast<double>(t.cost_cycles);
          by_wait[group].second += static_cast<double>(replay.tasks[static_cast<std::size_t>(t.id)].cost_cycles);
        }
        for (const auto& [group, cycles] : by_wait) {
          if (cycles.first > 0) c.wait_time_errors[group].push_back(cycles.second / cycles.first - 1);
        }
      }
    }
  }
  report.footprint_slowdown = footprint_slowdowns.empty() ? -1.0 : median_of(footprint_slowdowns);
  if (readings) {
    machine.readings = readings->count();
    machine.off_fraction = readings->off_fraction();
    machine.tolerance = readings->tolerance();
    machine.usual_s = readings->usual_s();
    report.machine_state = machine;
  }
  if (calibrated_steps_s[1].size() > 1) {
    const std::vector<double>& alone = calibrated_steps_s[1];
    report.calibration_drift = alone.back() / alone.front() - 1;
    report.calibration_spread = half_range_over_median(alone);
  }
  for (const int p : counts) {
    if (p == 1 || calibrated_steps_s[p].empty()) continue;
    std::vector<double> slowdowns;
    for (std::size_t r = 0; r < calibrated_steps_s[p].size(); ++r) {
      slowdowns.push_back(calibrated_steps_s[p][r] / calibrated_steps_s[1][r] - 1);
    }
    report.co_run_slowdown[p] = median_of(slowdowns);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> spreads, step_errors, replay_errors, cis, speedup_errors, speedup_cis;
  for (const auto& plan : plans) {
    const Configuration& one = configurations[plan.one];
    const Configuration& m = configurations[plan.at];
    ValidationRow row;
    row.schedule = plan.schedule;
    row.processors = plan.processors;
    row.baseline = plan.baseline;
    row.predicted_step_s = median_of(m.predicted_s);
    row.measured_step_s = m.measured_s();
    row.step_error = m.step_error();
    // Speedups pair the baseline's run with the row's run of the same round, and the
    // predictions of the same round's calibration.
    row.predicted_speedup = median_of(round_ratios(one.predicted_s, m.predicted_s));
    row.measured_speedup = median_of(round_ratios(one.steps_s, m.steps_s));
    if (plan.at != plan.one && !m.steps_s.empty()) {
      const std::vector<double> ratios = m.speedup_ratios(one);
      row.speedup_error = median_of(ratios) - 1;
      row.speedup_error_ci = median_ci_half_width(ratios);
      speedup_errors.push_back(row.speedup_error);
      speedup_cis.push_back(row.speedup_error_ci);
    }
    row.predicted_peak_bytes = median_of(m.predicted_peaks);
    row.measured_peak_bytes = median_of(m.measured_peaks);
    row.measured_peak_max_bytes = m.measured_peaks.empty() ? 0 : *std::max_element(m.measured_peaks.begin(), m.measured_peaks.end());
    row.measured_pool_peak_bytes = median_of(m.pool_peaks);
    row.predicted_step_peak_bytes = median_of(m.predicted_step_peaks);
    row.predicted_nominal_step_peak_bytes = median_of(m.nominal_step_peaks);
    row.peak_phase = m.peak_phase;
    row.measured_step_peak_bytes = median_of(m.measured_step_peaks);
    row.step_peak_error = m.step_peak_error();
    row.predicted_rounds_step_peak_bytes = m.predicted_step_peaks;
    row.predicted_rounds_nominal_step_peak_bytes = m.nominal_step_peaks;
    row.measured_rounds_step_peak_bytes = m.measured_step_peaks;
    row.measured_spread = m.spread();
    row.replayed_step_s = m.replayed_s.empty() ? nan : median_of(m.replayed_s);
    row.replay_error = m.replay_errors.empty() ? nan : median_of(m.replay_errors);
    row.task_time_error = m.task_time_errors.empty() ? nan : median_of(m.task_time_errors);
    row.median_task_time_error = m.median_task_time_errors.empty() ? nan : median_of(m.median_task_time_errors);
    for (const auto& [part, errors] : m.part_time_errors) row.task_time_error_by_part[part] = median_of(errors);
    for (const auto& [wait, errors] : m.wait_time_errors) row.task_time_error_by_wait[wait] = median_of(errors);
    row.co_run_weight = m.terms.co_run_weight;
    row.footprint_factor = m.terms.footprint_factor;
    row.stash_far_share = m.terms.stash_far_share;
    row.weight_reuse_s = m.terms.weight_reuse_s;
    row.wait_loss_s = m.wait_loss_s;
    row.error_ci = m.error_ci();
    row.predicted_rounds_s = m.predicted_s;
    row.measured_rounds_s = m.steps_s;
    cis.push_back(row.error_ci);
    spreads.push_back(row.measured_spread);
    step_errors.push_back(row.step_error);
    if (!m.replay_errors.empty()) replay_errors.push_back(row.replay_error);
    report.rows.push_back(row);
  }
  report.noise_floor = median_of(spreads);
  report.error_ci = median_of(cis);
  report.mean_abs_step_error = mean_abs(step_errors);
  report.max_abs_step_error = max_abs(step_errors);
  report.mean_abs_speedup_error = mean_abs(speedup_errors);
  report.max_abs_speedup_error = max_abs(speedup_errors);
  report.speedup_error_ci = speedup_cis.empty() ? 0 : median_of(speedup_cis);
  report.mean_abs_replay_error = replay_errors.empty() ? nan : mean_abs(replay_errors);
  report.max_abs_replay_error = replay_errors.empty() ? nan : max_abs(replay_errors);
  for (const int p : options.processors) {
    std::vector<double> predicted, measured;
    std::vector<const std::vector<double>*> steps_s;  // per round
    std::vector<const Configuration*> at_p;
    for (std::size_t k = 0; k < plans.size(); ++k) {
      if (plans[k].processors != p) continue;
      predicted.push_back(report.rows[k].predicted_step_s);
      measured.push_back(report.rows[k].measured_step_s);
      steps_s.push_back(&configurations[plans[k].at].steps_s);
      at_p.push_back(&configurations[plans[k].at]);
    }
    // Schedules that run one program here: one measured step for them all (their mean), so that
    // the ranking ties them as the prediction does.
    std::vector<std::size_t> program(at_p.size());  // the first schedule with the same program
    for (std::size_t i = 0; i < at_p.size(); ++i) {
      program[i] = i;
      for (std::size_t j = 0; j < i && program[i] == i; ++j) {
        if (program[j] == j && same_program(at_p[j]->graph, at_p[i]->graph)) program[i] = j;
      }
    }
    std::vector<double> measured_tied = measured;
    for (std::size_t j = 0; j < at_p.size(); ++j) {
      std::vector<std::size_t> group;
      for (std::size_t i = j; i < at_p.size(); ++i) {
        if (program[i] == j) group.push_back(i);
      }
      if (group.size() < 2) continue;
      double sum = 0;
      std::vector<std::string> names;
      for (const std::size_t i : group) {
        sum += measured[i];
        names.push_back(at_p[i]->schedule);
      }
      for (const std::size_t i : group) measured_tied[i] = sum / static_cast<double>(group.size());
      report.same_program_schedules[p].push_back(std::move(names));
    }
    const auto one_program = [&](std::size_t i, std::size_t j) { return program[i] == program[j]; };
    report.kendall_tau[p] = kendall_tau(predicted, measured_tied);
    ValidationReport::PairOrder& order = report.pair_order[p];
    for (std::size_t i = 0; i < predicted.size(); ++i) {
      for (std::size_t j = i + 1; j < predicted.size(); ++j) {
        if (one_program(i, j)) continue;
        const double predicted_gap = predicted[i] - predicted[j], measured_gap = measured[i] - measured[j];
        if (predicted_gap == 0) {  // the engine's cycles alike: one step's worth of the same tasks
          ++order.predicted_equal;
          const double faster = std::min(measured[i], measured[j]);
          if (faster > 0) order.widest_predicted_equal_gap = std::max(order.widest_predicted_equal_gap, std::abs(measured_gap) / faster);
        } else if (measured_gap == 0) {
          ++order.measured_equal;
        } else {
          ++(predicted_gap * measured_gap > 0 ? order.in_order : order.against);
        }
      }
    }
    // Only the pairs whose measured order is known: the rounds' ratios of the two (each round runs
    // both, so a change of the machine's speed between rounds cancels), their median's exact
    // interval clear of 1, at 95% for all the pairs at once (each at 5% over the pairs: of 15
    // pairs, one would pass a 95% test by chance in about half the validations). Exact, not the
    // normal approximation's ranks: those clamp to the rounds' range, which with 2 rounds holds the
    // median only half the time; 15 pairs need 10 rounds.
    const std::size_t count_of_pairs = measured.size() * (measured.size() - 1) / 2;
    const double alpha = count_of_pairs > 0 ? 0.05 / static_cast<double>(count_of_pairs) : 0.05;
    const auto separable = [&](std::size_t i, std::size_t j) {
      return !one_program(i, j) && median_differs_from(round_ratios(*steps_s[i], *steps_s[j]), 1.0, alpha);
    };
    int count = 0;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      for (std::size_t j = i + 1; j < measured.size(); ++j) count += separable(i, j);
    }
    report.separable_kendall_tau[p] = kendall_tau_where(predicted, measured_tied, separable);
    report.separable_pairs[p] = {count, static_cast<int>(count_of_pairs)};
  }
  return report;
}

}  // namespace pipetwin
