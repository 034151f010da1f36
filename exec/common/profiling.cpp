// Calibration from any executor's run: per-layer timings (median of blocks' means of repeats), the executor's
// overhead per task, and how long a handoff between two threads takes.
#include "pipetwin/exec/profiling.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <unistd.h>  // sysconf: the machine's memory

#include "pipetwin/exec/co_run_slope.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "spin_wait.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/stash_reuse.hpp"
#include "pipetwin/schedule/wait_loss.hpp"
#include "pipetwin/schedule/warm_to_linear.hpp"
#include "pipetwin/schedule/weight_reuse.hpp"

namespace pipetwin {

namespace {
template <typename T>
T upper_median(std::vector<T> values) {
  if (values.empty()) return T{0};
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The mean of `samples`, robust to a few stalls: the samples, in the order taken, cut into up to
// 8 blocks of consecutive ones, and the upper median of the blocks' means (the median-of-means
// estimator: Nemirovsky and Yudin, 1983; Lugosi and Mendelson, 2019). A step is a sum of task
// times, so a table wants each task's mean, which a right-skewed time (a task now and then slowed
// by the other thread, a cache miss, an interrupt) puts above its median; a thread's stall of
// milliseconds, which would swamp a plain mean, is one block's.
double median_of_means(const std::vector<double>& samples) {
  constexpr std::size_t kMostBlocks = 8;
  const std::size_t blocks = std::min(kMostBlocks, samples.size());
  if (blocks == 0) return 0;
  std::vector<double> means;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = samples.size() * b / blocks, to = samples.size() * (b + 1) / blocks;
    double sum = 0;
    for (std::size_t i = from; i < to; ++i) sum += samples[i];
    means.push_back(sum / static_cast<double>(to - from));
  }
  return upper_median(std::move(means));
}

// `config` as a profile runs it: `schedule` on `processors`, `minibatches` long, one replica,
// without the calibration the profile is to give.
GraphConfig profile_run_config(const GraphConfig& config, const std::string& schedule, std::int32_t processors,
                               std::int32_t minibatches) {
  GraphConfig c = config;
  c.schedule = schedule;
  c.processors = processors;
  c.minibatches = minibatches;
  c.calibration_file.clear();
  c.calibration.reset();
  return single_replica(without_other_schedules_params(c));
}

// A profile's timed minibatches: about `repeats` microbatches per layer and kind. A profile's run
// makes as many warm-up minibatches before them. A run's step time is its second half's
// (steady_state_iteration_cycles), and the table times the same part of a run: a thread whose
// core was idle runs its first milliseconds slow (docs/executor.md, "A core after a sleep"),
// which a short run's first minibatches after the first still held (mlp at P = 2: the second
// minibatch's backwards 2-3 times the later ones', spikes up to the seventh).
std::int32_t profile_timed_minibatches(int repeats, std::int32_t microbatches) {
  return std::max(1, (repeats + microbatches - 1) / microbatches);
}

// The minibatches a profile's run times (and warms up over) for its timed part to span at least
// `span_s` at `step_s` a step, up to kMostSpanMinibatches; 0 without a step.
std::int32_t spanning_minibatches(double span_s, double step_s) {
  if (!(step_s > 0) || !(span_s > 0)) return 0;
  return static_cast<std::int32_t>(std::min(std::ceil(span_s / step_s), static_cast<double>(kMostSpanMinibatches)));
}

// Runs of a graph as a profile makes them (one, or copies at once), with its sampler.
using ProfileRuns = std::function<std::vector<TrainingRun>(const TaskGraph&, const BatchSampler&)>;

// Per layer of `network`: `value(time)` of each of its layers' records in `runs` of `graph`, from
// minibatch `skip_minibatches` on, whose task and record `take(task, time)` keeps (a layer's own
// records only: not a load at the input or an assembly), in the runs' order.
template <typename Take, typename Value>
std::vector<std::vector<double>> layer_values(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                              std::int32_t skip_minibatches, Take take, Value value) {
  std::vector<std::vector<double>> values(network.size());  // per layer
  for (const auto& run : runs) {
    for (const auto& time : run.layer_times) {
      const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
      if (t.minibatch < skip_minibatches || time.layer < 0 || !take(t, time)) continue;
      values[static_cast<std::size_t>(time.layer)].push_back(value(time));
    }
  }
  return values;
}

// Each layer's `field` in `calibration`: the median of means of its `seconds`, times `scale`;
// layers without any keep theirs.
void keep_medians(const Network& network, const std::vector<std::vector<double>>& seconds, double scale,
                  double LayerTimes::*field, Calibration& calibration) {
  for (std::size_t l = 0; l < network.size(); ++l) {
    if (!seconds[l].empty()) calibration.layers[network.layers[l].name].*field = median_of_means(seconds[l]) * scale;
  }
}

// The factor from a run's samples per task to a table's.
double to_table_samples(const TaskGraph& graph, const Calibration& calibration) {
  return static_cast<double>(calibration.samples) / static_cast<double>(graph.samples_per_microbatch);
}

// Per layer of `network` and kind (BA, BW): the way back to the linear output taken again
// (warm_to_linear.hpp), the median of means of what the tasks repeats_to_linear marks in `runs` of
// `graph` (after the warm-up minibatches) spent on it, scaled to `calibration`'s samples. Layers
// and kinds without such tasks keep theirs.
void record_to_linear_again(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                            std::int32_t skip_minibatches, Calibration& calibration) {
  const std::vector<bool> repeats = repeats_to_linear(graph);
  for (const auto& [kind, field] : {std::make_pair(TaskKind::BA, &LayerTimes::activation_grad_to_linear_again_s),
                                    std::make_pair(TaskKind::BW, &LayerTimes::weight_grad_to_linear_again_s)}) {
    const auto again_s = layer_values(
        graph, network, runs, skip_minibatches,
        [&, kind = kind](const Task& t, const LayerTime& time) {
          return repeats[static_cast<std::size_t>(t.id)] && t.kind == kind && time.kind == kind;
        },
        [](const LayerTime& time) { return time.to_linear_s; });
    keep_medians(network, again_s, to_table_samples(graph, calibration), field, calibration);
  }
}

// Per layer of `network`: LayerTimes::assembly_s, the median of means of the assemblies of the
// gradient at its output (layer kGradientAssemblyLayer of the tasks that made them, whose last
// layer it is) in `runs` of `graph` after the warm-up minibatches, scaled to `calibration`'s
// samples. Layers without such assemblies keep theirs.
void record_gradient_assemblies(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                std::int32_t skip_minibatches, Calibration& calibration) {
  std::vector<std::vector<double>> assembly_s(network.size());  // per layer
  for (const auto& run : runs) {
    for (const auto& time : run.layer_times) {
      const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
      if (t.minibatch < skip_minibatches || time.layer != kGradientAssemblyLayer) continue;
      assembly_s[static_cast<std::size_t>(t.last_layer)].push_back(time.seconds);
    }
  }
  keep_medians(network, assembly_s, to_table_samples(graph, calibration), &LayerTimes::assembly_s, calibration);
}

// Per layer of `network`: what `value` says of each one-layer task of `kind` in `runs` of `graph`
// (after the warm-up minibatches), taken to the overlap `calibration` was timed at by its co-run
// slope s and share o, (1 + s o) / (1 + s x) with x the task's share (other_busy_shares), where the
// table has them (validation's co-run scaling, docs/executor.md, "Forwards of one layer on two
// processors"); as they are otherwise.
std::vector<std::vector<double>> one_layer_seconds(const TaskGraph& graph, const Network& network,
                                                   const std::vector<TrainingRun>& runs, std::int32_t skip_minibatches,
                                                   const Calibration& calibration, TaskKind kind,
                                                   const std::function<double(const LayerTime&)>& value) {
  const bool co_run = calibration.co_run_slope >= 0 && calibration.co_run_share >= 0;
  const double s = calibration.co_run_slope, table_share = calibration.co_run_share;
  std::vector<std::vector<double>> seconds(network.size());  // per layer
  for (const auto& run : runs) {
    const std::vector<double> shares = co_run ? other_busy_shares(graph, run.result) : std::vector<double>{};
    for (const auto& time : run.layer_times) {
      const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
      if (t.minibatch < skip_minibatches || time.layer < 0 || t.kind != kind || time.kind != kind ||
          t.first_layer != t.last_layer) {
        continue;
      }
      const double to_table = co_run ? (1 + s * table_share) / (1 + s * shares[static_cast<std::size_t>(time.task)]) : 1.0;
      seconds[static_cast<std::size_t>(time.layer)].push_back(value(time) * to_table);
    }
  }
  return seconds;
}

// The median of means of `seconds`, less what the weight-reuse model says the run's order cost on
// the same weight block beyond the table's (`run_reuse_s` and `table_reuse_s`, -1 where not
// priced), so that a graph's reuse charge applies to the figure as to the table's own; at least 0.
double at_table_reuse_s(const std::vector<double>& seconds, double run_reuse_s, double table_reuse_s) {
  const double beyond_table_s = run_reuse_s >= 0 && table_reuse_s >= 0 ? run_reuse_s - table_reuse_s : 0.0;
  return std::max(0.0, median_of_means(seconds) - beyond_table_s);
}

}  // namespace

// A forward alone in its task, from the one-layer run (profiling.hpp): the reuse term on its
// weights W.
void record_one_layer_forwards(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                               std::int32_t skip_minibatches, Calibration& calibration) {
  if (graph.samples_per_microbatch != calibration.samples) return;  // the times would not compare
  const auto forward_s = one_layer_seconds(graph, network, runs, skip_minibatches, calibration, TaskKind::F,
                                           [](const LayerTime& time) { return time.seconds; });
  const std::vector<LayerReuseSeconds> reuse = mean_reuse_seconds(graph, network, calibration, skip_minibatches);
  for (std::size_t l = 0; l < network.size(); ++l) {
    if (forward_s[l].empty()) continue;
    LayerTimes& times = calibration.layers[network.layers[l].name];
    times.forward_one_layer_s = at_table_reuse_s(forward_s[l], reuse[l].forward_weights_s, times.forward_weights_reuse_s);
  }
}

// A BW alone in its task, past its way back to the linear output, from the one-layer run
// (profiling.hpp): the reuse term on its gradient sum dW. Only where the table has a fused B; where
// it has no BA to tell the way back by (the network's first layer: to_linear_s() is 0 there,
// whatever the way back costs), the whole BW, its way back included, which nothing else prices:
// resnet8's conv1 went back through its batch norm and ReLU in more than half its one-layer BW's
// time, and its BWs in LayerPipe at P = 2 ran 8% over the whole-network price (docs/executor.md,
// "The first layer's BW alone").
void record_one_layer_weight_grads(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                   std::int32_t skip_minibatches, Calibration& calibration) {
  if (graph.samples_per_microbatch != calibration.samples) return;  // the times would not compare
  std::vector<bool> tells_way_back(network.size(), false);  // per layer: a BA to tell it by
  for (std::size_t l = 0; l < network.size(); ++l) {
    const auto it = calibration.layers.find(network.layers[l].name);
    tells_way_back[l] = it != calibration.layers.end() && it->second.activation_grad_s > 0;
  }
  const auto bw_s = one_layer_seconds(graph, network, runs, skip_minibatches, calibration, TaskKind::BW,
                                      [&](const LayerTime& time) {
                                        if (!tells_way_back[static_cast<std::size_t>(time.layer)]) return time.seconds;
                                        return std::max(0.0, time.seconds - time.to_linear_s);
                                      });
  const std::vector<LayerReuseSeconds> reuse = mean_reuse_seconds(graph, network, calibration, skip_minibatches);
  for (std::size_t l = 0; l < network.size(); ++l) {
    if (bw_s[l].empty()) continue;
    LayerTimes& times = calibration.layers[network.layers[l].name];
    if (times.to_linear_s() < 0) continue;
    times.weight_grad_dw_one_layer_s =
        at_table_reuse_s(bw_s[l], reuse[l].backward_gradient_s, times.backward_gradient_reuse_s);
  }
}

// A BA of one layer split into parts by samples, from the one-layer run (profiling.hpp): the line
// through the parts' dx (at the table's overlap and weight reuse on W) at their samples and the
// table's whole dx, where it meets no samples (clamped to [0, the parts' dx]), and the line through
// that and the parts' dx at the table's samples.
void record_one_layer_activation_grads(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                       std::int32_t skip_minibatches, Calibration& calibration) {
  if (graph.samples_per_microbatch != calibration.samples) return;  // the two points' samples would not compare
  const double whole_samples = static_cast<double>(calibration.samples);
  const auto dx_s = one_layer_seconds(graph, network, runs, skip_minibatches, calibration, TaskKind::BA,
                                      [](const LayerTime& time) { return std::max(0.0, time.seconds - time.to_linear_s); });
  const auto samples_of_parts = layer_values(
      graph, network, runs, skip_minibatches,
      [](const Task& t, const LayerTime& time) {
        return t.kind == TaskKind::BA && time.kind == TaskKind::BA && t.first_layer == t.last_layer;
      },
      [&](const LayerTime& time) {
        const SampleRange range = part_samples(graph.tasks[static_cast<std::size_t>(time.task)], graph.samples_per_microbatch);
        return static_cast<double>(range.end - range.begin);
      });
  const std::vector<LayerReuseSeconds> reuse = mean_reuse_seconds(graph, network, calibration, skip_minibatches);
  for (std::size_t l = 0; l < network.size(); ++l) {
    if (dx_s[l].empty() || samples_of_parts[l].size() != dx_s[l].size()) continue;
    LayerTimes& times = calibration.layers[network.layers[l].name];
    if (times.to_linear_s() < 0) continue;
    double samples = 0;
    for (const double n : samples_of_parts[l]) samples += n;
    samples /= static_cast<double>(samples_of_parts[l].size());
    if (!(samples > 0 && samples < whole_samples)) continue;  // no parts: nothing to draw a line through
    const double part_dx = at_table_reuse_s(dx_s[l], reuse[l].backward_weights_s, times.backward_weights_reuse_s);
    const double whole_dx = times.activation_grad_s - times.to_linear_s();
    // dx(n) = fixed + (dx(S) - fixed) n / S through (n, part_dx), and through (S, whole_dx) where
    // fixed is not clamped.
    const double fixed = std::clamp((part_dx * whole_samples - whole_dx * samples) / (whole_samples - samples), 0.0, part_dx);
    times.activation_grad_fixed_s = fixed;
    times.activation_grad_dx_one_layer_s = fixed + (part_dx - fixed) * whole_samples / samples;
  }
}

namespace {

// Per layer of `network`: LayerTimes::activation_grad_to_linear_one_layer_s, the median of means
// of the way back to the linear output taken by the one-layer BA parts of `runs` of `graph` (the
// one-processor one-layer run; after the warm-up minibatches) that do not follow another task of
// their layer and microbatch (repeats_to_linear: those go back again), scaled to `calibration`'s
// samples. Layers without such parts keep theirs.
void record_part_to_linear(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                           std::int32_t skip_minibatches, Calibration& calibration) {
  const std::vector<bool> repeats = repeats_to_linear(graph);
  const auto first_s = layer_values(
      graph, network, runs, skip_minibatches,
      [&](const Task& t, const LayerTime& time) {
        return t.kind == TaskKind::BA && time.kind == TaskKind::BA && t.first_layer == t.last_layer &&
               !repeats[static_cast<std::size_t>(t.id)];
      },
      [](const LayerTime& time) { return time.to_linear_s; });
  keep_medians(network, first_s, to_table_samples(graph, calibration), &LayerTimes::activation_grad_to_linear_one_layer_s,
               calibration);
}

// The short runs a profile makes beside its timed one: two minibatches timed, after two to warm
// up (profile_minibatches).
constexpr std::int32_t kShortRunWarmUp = 2;
// Runs that a short one's few samples would leave too noisy: five timed after five.
constexpr std::int32_t kLongerRunWarmUp = 5;

// The graph of such a run (`run_config`), or none where its schedule cannot cut the network so:
// `progress` is told which run is made ("timing the overhead of <what>") or why none is, and what
// the table does without it.
std::optional<TaskGraph> short_run_graph(const GraphConfig& run_config, const std::string& without, const std::string& what,
                                         const std::function<void(const std::string&)>& progress) {
  try {
    TaskGraph graph = make_graph(run_config);
    if (progress) {
      progress("timing the overhead of " + what + " (a " +
               (run_config.processors == 1 ? std::string("one") : std::to_string(run_config.processors)) + "-processor " +
               run_config.schedule + " run)");
    }
    return graph;
  } catch (const Error& e) {
    if (progress) progress("no " + run_config.schedule + " run (" + e.what() + "): " + without);
    return std::nullopt;
  }
}

// Split BA and BW tasks that span their stage (zero bubble's) cost something else beyond their
// layers than LayerPipe's one-layer ones, which have more around them (remote inputs, slices to
// assemble, more readers to release): at P = 2 on mlp 0.55-0.8 us for zb-h1's BAs with layers
// against 1.4-2.1 us for LayerPipe's (docs/executor.md, "Split tasks that span their stage"). A
// short zb-h1 run of `network` on `processors` (two minibatches timed after two of warm-up), which
// `run_all` makes, gives calibration.stage_kind_overhead_s: per split kind, the mean (median of
// means) of its tasks' overhead beyond calibration.layer_overhead_s per layer, at least 0. A
// network zb-h1 cannot cut that many ways goes without (the progress line says so).
void record_stage_split_overheads(const GraphConfig& config, const Network& network, std::int32_t processors,
                                  const Dataset& data, std::uint64_t seed, const ProfileRuns& run_all,
                                  const std::function<void(const std::string&)>& progress, Calibration& calibration) {
  GraphConfig split = profile_run_config(config, "zb-h1", processors, 2 * kShortRunWarmUp);
  split.calibration = std::make_shared<const Calibration>(calibration);  // cut as the table's graphs are
  const std::optional<TaskGraph> made =
      short_run_graph(split, "split tasks over a stage take LayerPipe's per-task parts", "split tasks over a stage", progress);
  if (!made) return;
  const TaskGraph& graph = *made;
  const BatchSampler sampler(data, network.batch, split.microbatches, split.minibatches, seed);
  std::map<TaskKind, std::vector<double>> beyond_slope;  // per kind, in task order (the blocks mix the stages)
  for (const auto& run : run_all(graph, sampler)) {
    std::map<std::int32_t, double> overhead_s;  // by task, of those with layer times of their kind
    for (const auto& o : task_overheads(graph, {run}, kShortRunWarmUp)) overhead_s[o.task] = o.seconds;
    for (const Task& t : graph.tasks) {
      if ((t.kind != TaskKind::BA && t.kind != TaskKind::BW) || t.minibatch < kShortRunWarmUp) continue;
      // A split task whose layers have nothing of its kind to do (a BA over the first layer
      // alone) records no layer time, yet the executor runs it: all of it is overhead.
      const auto it = overhead_s.find(t.id);
      const TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
      const double seconds = it != overhead_s.end() ? it->second
                                                    : static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz;
      beyond_slope[t.kind].push_back(seconds - calibration.layer_overhead_s * (t.last_layer - t.first_layer + 1));
    }
  }
  calibration.stage_kind_overhead_s.clear();
  for (const auto& [kind, seconds] : beyond_slope) calibration.stage_kind_overhead_s[kind] = std::max(0.0, median_of_means(seconds));
}

// Per thread of `run` (a processor's, with the transfers its sender's thread copied when the run
// copied on senders: copied_after), its tasks in the order they started.
std::vector<std::vector<std::int32_t>> thread_sequences(const TaskGraph& graph, const TrainingRun& run) {
  const std::vector<std::int32_t> after =
      run.copies_on_senders ? copied_after(graph) : std::vector<std::int32_t>(graph.tasks.size(), -1);
  std::vector<std::vector<std::int32_t>> threads(static_cast<std::size_t>(graph.processor_count()));
  for (const auto& t : graph.tasks) {
    std::int32_t thread = -1;
    if (t.placement == Placement::processor) thread = t.resource;
    if (t.placement == Placement::link && after[static_cast<std::size_t>(t.id)] >= 0) {
      thread = graph.tasks[static_cast<std::size_t>(after[static_cast<std::size_t>(t.id)])].resource;
    }
    if (thread >= 0 && thread < static_cast<std::int32_t>(threads.size())) threads[static_cast<std::size_t>(thread)].push_back(t.id);
  }
  for (auto& ids : threads) {
    std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
      return run.result.tasks[static_cast<std::size_t>(a)].start_cycles < run.result.tasks[static_cast<std::size_t>(b)].start_cycles;
    });
  }
  return threads;
}

// What the wait of `wait_s` before task `t` cost its record `time` of a layer, by `calibration`'s
// wait curve: the layer's share of the task's charge (layer_wait_exposed_bytes over the task's; a
// fused B's BA and BW records share its layer's charge by their own bytes), as the engines charge
// the task, for at most the curve's footprint of its bytes (Calibration::wait_charged_bytes).
double own_wait_charge_s(const TaskGraph& graph, const Task& t, const LayerTime& time, const Network& network,
                         double wait_s, const Calibration& calibration) {
  if (calibration.wait_curve.extra_s_per_byte.empty() || !(wait_s > 0) || time.layer < 0) return 0;
  const SampleRange part = part_samples(t, graph.samples_per_microbatch);
  const std::int64_t samples = part.end - part.begin;
  const std::int64_t layer_bytes = layer_wait_exposed_bytes(t, network, time.layer, samples);
  double share = 1;
  if (time.kind != t.kind) {  // a fused B's BA or BW
    Task as_ba = t, as_bw = t;
    as_ba.kind = TaskKind::BA;
    as_bw.kind = TaskKind::BW;
    const auto ba = static_cast<double>(layer_wait_exposed_bytes(as_ba, network, time.layer, samples));
    const auto bw = static_cast<double>(layer_wait_exposed_bytes(as_bw, network, time.layer, samples));
    if (ba + bw <= 0 || (time.kind != TaskKind::BA && time.kind != TaskKind::BW)) return 0;
    share = (time.kind == TaskKind::BA ? ba : bw) / (ba + bw);
  }
  const std::int64_t task_bytes = task_wait_exposed_bytes(graph, t, network);
  if (task_bytes <= 0) return 0;
  const double charged = static_cast<double>(calibration.wait_charged_bytes(task_bytes)) / static_cast<double>(task_bytes);
  return share * charged * calibration.wait_extra_s(wait_s, layer_bytes);
}

// The copies the senders' threads made in `runs` of `graph` (after their first
// `skip_minibatches`), per size: their measured durations in seconds, thread by thread in the
// order they started. A link's own thread's copies are not among them.
std::map<std::int64_t, std::vector<double>> sender_copy_seconds_by_size(const TaskGraph& graph,
                                                                        const std::vector<TrainingRun>& runs,
                                                                        std::int32_t skip_minibatches) {
  std::map<std::int64_t, std::vector<double>> copies_s;  // by bytes
  for (const auto& run : runs) {
    if (run.result.tasks.size() != graph.tasks.size()) continue;
    for (const auto& ids : thread_sequences(graph, run)) {
      for (const std::int32_t id : ids) {
        const Task& t = graph.tasks[static_cast<std::size_t>(id)];
        if (t.minibatch < skip_minibatches || t.placement != Placement::link || t.bytes <= 0) continue;
        const TaskTiming& time = run.result.tasks[static_cast<std::size_t>(id)];
        copies_s[t.bytes].push_back(static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz);
      }
    }
  }
  return copies_s;
}

// The copies the senders' threads made in `runs` of `graph` (after `skip_minibatches`), the
// median of means per size, added to calibration.pipeline_copy_seconds: the timed pipeline's, and
// then a short run's of another schedule on as many processors, for the sizes the pipeline did not
// make (a size already there keeps its figure). LayerPipe's stash copies
// (resnet8 at P = 2: 1-6 MiB, 16-44 GB/s) were priced as copies in a row with both cores copying
// (8-9 GB/s) where the pipeline had made none of their size: 2.5 times what they took.
void add_pipeline_copies(const TaskGraph& graph, const std::vector<TrainingRun>& runs, std::int32_t skip_minibatches,
                         Calibration& calibration) {
  std::map<std::int64_t, double> copies_s(calibration.pipeline_copy_seconds.begin(), calibration.pipeline_copy_seconds.end());
  for (const auto& [bytes, seconds] : sender_copy_seconds_by_size(graph, runs, skip_minibatches)) {
    copies_s.emplace(bytes, median_of_means(seconds));  // a size already there keeps its figure
  }
  calibration.pipeline_copy_seconds.assign(copies_s.begin(), copies_s.end());
}

// Tasks spanning the same layers cannot tell what a task costs beyond its layers from what each
// layer in it costs: refits `calibration`'s overhead line to the tasks of `timed` (runs of
// `graph`, after their first `skip_minibatches`) and those of a short layerpipe run of `network`
// (a task per layer; two minibatches timed after two of warm-up, five after five on two or more
// processors) on `processors`, which `run_all` makes. A network LayerPipe cannot cut keeps the
// line `timed` gave. The one-layer run also gives the table its way back to the linear output
// taken again (record_to_linear_again), what a BA part costs whatever its samples and the dx of
// one-layer parts (record_one_layer_activation_grads), what a forward of one layer costs alone in
// its task (record_one_layer_forwards), on one processor a BA part's way back to the linear
// output the first time (record_part_to_linear), and on two or more processors its senders'
// copies of sizes `timed` made none of (add_pipeline_copies); then a short zb-h1 run what split
// tasks over a stage cost beyond the line (record_stage_split_overheads).
void fit_overheads_with_one_layer_tasks(const GraphConfig& config, const Network& network, std::int32_t processors,
                                        const Dataset& data, std::uint64_t seed, const TaskGraph& graph,
                                        const std::vector<TrainingRun>& timed, std::int32_t skip_minibatches,
                                        const ProfileRuns& run_all,
                                        const std::function<void(const std::string&)>& progress,
                                        Calibration& calibration) {
  // On two or more processors a longer run, whose one-layer forwards price LayerPipe's there
  // (record_one_layer_forwards): on resnet8 at P = 2, runs of two minibatches' warm-up and two
  // timed had those forwards 20-35% over their layers' table times in two profiles of three and
  // -10 to +21% in the third; runs of five and five, -3 to +23% in all three, as LayerPipe's own
  // runs (docs/executor.md, "Forwards of one layer on two processors"). About 0.6 s more on
  // resnet8.
  const std::int32_t warm_up = processors > 1 ? kLongerRunWarmUp : kShortRunWarmUp;
  // Laid out by the table timed so far, as the graphs it will price are: a run laid out by the
  // roofline split layers over processors where the table's graphs do not, and its one-layer
  // tasks then ran 2-3 times as long (docs/executor.md, "LayerPipe's BA parts at P = 2").
  GraphConfig per_layer = profile_run_config(config, "layerpipe", processors, 2 * warm_up);
  per_layer.calibration = std::make_shared<const Calibration>(calibration);
  const std::optional<TaskGraph> made =
      short_run_graph(per_layer, "the overhead line is the timed run's alone", "one-layer tasks", progress);
  if (!made) {
    record_stage_split_overheads(config, network, processors, data, seed, run_all, progress, calibration);
    return;
  }
  const TaskGraph& layer_graph = *made;
  const BatchSampler layer_sampler(data, network.batch, per_layer.microbatches, per_layer.minibatches, seed);
  std::vector<TaskOverhead> overheads = task_overheads(graph, timed, skip_minibatches);
  const std::vector<TrainingRun> layer_runs = run_all(layer_graph, layer_sampler);
  const auto one_layer = task_overheads(layer_graph, layer_runs, warm_up);
  overheads.insert(overheads.end(), one_layer.begin(), one_layer.end());
  fit_task_overheads(overheads, calibration);
  record_to_linear_again(layer_graph, network, layer_runs, warm_up, calibration);
  // What a BA part costs whatever its samples, and the dx of one-layer parts (on mlp a part of 8
  // of 16 samples took 0.36 of fc2's whole-network dx, docs/executor.md, "The dx of one layer").
  record_one_layer_activation_grads(layer_graph, network, layer_runs, warm_up, calibration);
  // On every table: a layer's forward runs at another speed alone in its task than in a stage's
  // (on resnet8 at P = 2 LayerPipe's second processor's forwards 7-10% over the 1f1b table's,
  // docs/executor.md, "Forwards of one layer on two processors").
  record_one_layer_forwards(layer_graph, network, layer_runs, warm_up, calibration);
  // And a BW's dW (on resnet8 at P = 2 LayerPipe's first processor's BWs ran 2-10% over the price
  // from the table's whole-network tasks, docs/executor.md, "A BW of one layer").
  record_one_layer_weight_grads(layer_graph, network, layer_runs, warm_up, calibration);
  // Alone on the machine only: on more processors the one-layer run's BA parts also hold the
  // others' work, at that run's overlap.
  if (processors == 1) record_part_to_linear(layer_graph, network, layer_runs, warm_up, calibration);
  record_gradient_assemblies(layer_graph, network, layer_runs, warm_up, calibration);
  if (processors > 1) add_pipeline_copies(layer_graph, layer_runs, warm_up, calibration);
  record_stage_split_overheads(config, network, processors, data, seed, run_all, progress, calibration);
}

// The bytes `runs` held while they computed: the largest step peak of any of their processors (or
// copies) of what their forwards and backwards held (Result::step_compute_peak_memory_bytes).
std::int64_t footprint_bytes(const std::vector<TrainingRun>& runs) {
  std::int64_t bytes = 0;
  for (const auto& run : runs) {
    bytes = std::max(bytes, max_peak(run.result.step_compute_peak_memory_bytes));
  }
  return bytes;
}

// A minibatch's forwards and backwards in `runs` of `graph`, measured as whole tasks (their
// layers, the buffers they take and free, the steps between layers), in the runs' cycles: the
// median of means (median_of_means) over each run's minibatches after the first `skip_minibatches`,
// robust to a stall as the table's layer times are.
double forward_and_backward_cycles(const TaskGraph& graph, const std::vector<TrainingRun>& runs,
                                   std::int32_t skip_minibatches) {
  std::vector<double> per_minibatch;  // each run's minibatches in order
  for (const auto& run : runs) {
    std::map<std::int32_t, double> cycles;  // by minibatch
    for (const Task& t : graph.tasks) {
      if (t.minibatch < skip_minibatches || (t.kind != TaskKind::F && t.kind != TaskKind::B)) continue;
      const TaskTiming& timing = run.result.tasks.at(static_cast<std::size_t>(t.id));
      cycles[t.minibatch] += static_cast<double>(timing.end_cycles - timing.start_cycles);
    }
    for (const auto& [minibatch, c] : cycles) per_minibatch.push_back(c);
  }
  return per_minibatch.empty() ? 0.0 : median_of_means(per_minibatch);
}

// What charge_weight_reuse would add to `graph`'s forwards and backwards (by `calibration`'s reuse
// curve and its layers' figures), per minibatch from `skip_minibatches` on, in the graph's cycles;
// 0 without a curve.
double reuse_charge_cycles_per_minibatch(const TaskGraph& graph, const Network& network, const Calibration& calibration,
                                         std::int32_t skip_minibatches) {
  const auto forward_or_backward = [](const Task& t) { return t.kind == TaskKind::F || t.kind == TaskKind::B; };
  return weight_reuse_charge_per_minibatch_s(graph, network, calibration, skip_minibatches, forward_or_backward) *
         graph.clock_hz;
}

// Whether `copies` runs of `graph` at once would hold more than half this machine's memory (by
// its predicted peaks, all processors together): a profile then goes without the figure such runs
// would give rather than failing or swapping. False where the machine's memory is not known.
bool over_half_the_memory(const Result& predicted, int copies) {
  std::int64_t peak_bytes = 0;
  for (const std::int64_t peak : predicted.peak_memory_bytes) peak_bytes += peak;
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_bytes > 0 && peak_bytes * copies > static_cast<std::int64_t>(pages) * page_bytes / 2;
}

// Calibration::footprint_slowdown: `config`'s network also run on one processor under gpipe, as
// long as the sequential run (`sequential_runs` of `sequential_graph`, whose footprint
// `calibration` records as timed_footprint_bytes; `warm_up` minibatches, then as many timed),
// which holds every microbatch's stash at once where sequential holds one; how much
// longer its forwards and backwards took, whole tasks, as a fraction (a negative one is the
// samples' noise: 0), between the two runs' footprints. Whole tasks, not the layers' own times
// (the table's): a task also takes and frees its buffers, and on lenet5 the layers' times gave
// 0.2-1.2% where whole runs of the two schedules differed by 0.9-4.4%. Left unmeasured where
// gpipe holds no more.
void time_footprint_slowdown(const GraphConfig& config, const Network& network, const Dataset& data, std::int32_t warm_up,
                             std::uint64_t seed, const TaskGraph& sequential_graph,
                             const std::vector<TrainingRun>& sequential_runs, const ProfileRuns& run_all,
                             const std::function<void(const std::string&)>& progress, Calibration& calibration) {
  const GraphConfig gpipe = profile_run_config(config, "gpipe", 1, 2 * warm_up);
  TaskGraph graph;
  std::vector<TrainingRun> measured;
  try {
    graph = make_graph(gpipe);
    // Where gpipe holds no more than the sequential run did while computing, there is nothing to
    // measure: no run.
    const Result predicted = evaluate(graph);
    if (max_peak(predicted.step_compute_peak_memory_bytes) <= calibration.timed_footprint_bytes) return;
    // Every stash at once can be more than this machine holds where one at a time was not.
    if (over_half_the_memory(predicted, 1)) {
      if (progress) progress("no footprint figure: a one-processor gpipe run would hold more than half this machine's memory");
      return;
    }
    if (progress) {
      progress("profiling " + network.name + ": the layers again in a one-processor gpipe run (every microbatch's "
               "stash held at once), for what a larger footprint costs");
    }
    const BatchSampler sampler(data, network.batch, gpipe.microbatches, gpipe.minibatches, seed);
    measured = run_all(graph, sampler);
  } catch (const Error& e) {  // e.g. more than the processor's capacity
    if (progress) progress(std::string("no footprint figure: ") + e.what());
    return;
  }
  const std::int64_t small_bytes = calibration.timed_footprint_bytes, large_bytes = footprint_bytes(measured);
  if (small_bytes <= 0 || large_bytes <= small_bytes) return;
  const double sequential_cycles = forward_and_backward_cycles(sequential_graph, sequential_runs, warm_up);
  // What the weight-reuse model says gpipe's order gains or loses in the caches against the
  // table's (its forwards follow forwards): the figure is what holding more costs beyond that.
  const double reuse_cycles = reuse_charge_cycles_per_minibatch(graph, network, calibration, warm_up);
  const double gpipe_cycles = forward_and_backward_cycles(graph, measured, warm_up) - reuse_cycles;
  if (!(sequential_cycles > 0)) return;
  calibration.footprint_slowdown = std::max(0.0, gpipe_cycles / sequential_cycles - 1);
  calibration.footprint_small_bytes = small_bytes;
  calibration.footprint_large_bytes = large_bytes;
}

// `copies` runs of `graph` by `run` at once, one thread each (one: on the calling thread), with
// `options` but for each copy's pinning and index: copy k runs where processor k of a run pinned
// to `pin_cpus` would (empty: unpinned), as copy k of `copies`. The first copy's error is thrown
// once all have ended.
std::vector<TrainingRun> run_copies_at_once(const Runner& run, const TaskGraph& graph, const Network& network,
                                            const BatchSampler& sampler, const TrainingOptions& options, int copies,
                                            const std::vector<int>& pin_cpus) {
  std::vector<TrainingRun> measured(static_cast<std::size_t>(copies));
  const auto options_of_copy = [&](std::size_t k) {
    TrainingOptions mine = options;
    if (!pin_cpus.empty()) mine.pin_cpus = {pinned_cpu(pin_cpus, static_cast<int>(k))};
    mine.copy = static_cast<int>(k);
    mine.copies = copies;
    return mine;
  };
  if (copies == 1) {
    measured[0] = run(graph, network, sampler, options_of_copy(0));
    return measured;
  }
  std::vector<std::exception_ptr> errors(measured.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < measured.size(); ++k) {
    threads.emplace_back([&, k] {
      try {
        measured[k] = run(graph, network, sampler, options_of_copy(k));
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return measured;
}

// The stash term's far point (Calibration::far_stash_distance_bytes): `config`'s network as
// one-processor gpipe on each of the `processors` threads of the pipeline run `pipeline_graph` at
// once (pinned where its processors were), as many minibatches as that run, `warm_up` of them
// left out; per processor of the pipeline, its layers' forwards and backwards summed there and in
// `calibration` (timed in that run), and the ratio (at least 1: holding stashes longer does not
// speed a layer up) put on each of its layers with the pipeline's stash reuse distance on that
// processor. Left unmeasured (the reason to `progress`) where the far point is within the floor
// (stash_distance_floor_bytes: nothing to gain), or the copies would hold more than
// half this machine's memory, cannot be built, or a run is refused (an Error).
void time_stash_far_point(const GraphConfig& config, const Network& network, const Dataset& data, std::uint64_t seed,
                          const TaskGraph& pipeline_graph, std::int32_t minibatches, std::int32_t warm_up, int processors,
                          const Runner& run, const TrainingOptions& options,
                          const std::function<void(const std::string&)>& progress,
                          const WaitCurve& wait_curve, Calibration& calibration) {
  const GraphConfig gpipe = profile_run_config(config, "gpipe", 1, minibatches);
  TaskGraph graph;
  try {
    graph = make_graph(gpipe);
  } catch (const Error& e) {
    if (progress) progress(std::string("no stash far point: ") + e.what());
    return;
  }
  const std::vector<StashReuse> far = stash_reuse(graph, network), timed = stash_reuse(pipeline_graph, network);
  // A far point within the floor's reach is as warm as the table: nothing to measure (and the
  // runs not made: on mlp, whose far point is under 1 MiB, making them before each validate
  // round's runs put its one-processor rows 9.5-23% slow, where they were -3.9% to +11% without;
  // docs/executor.md, Calibration 10).
  const double floor_bytes = stash_distance_floor_bytes(calibration);
  if (far.empty() || !(far[0].distance_bytes > floor_bytes)) {
    if (progress) {
      progress("no stash far point: one-processor gpipe holds its stashes for " +
               std::to_string(static_cast<std::int64_t>(far.empty() ? 0.0 : far[0].distance_bytes) >> 10) +
               " KiB, within the " + std::to_string(static_cast<std::int64_t>(floor_bytes) >> 10) +
               " KiB a re-read costs nothing under");
    }
    return;
  }
  if (over_half_the_memory(evaluate(graph), processors)) {
    if (progress) progress("no stash far point: " + std::to_string(processors) + " one-processor gpipe runs would hold more than half this machine's memory");
    return;
  }
  if (progress) {
    progress("profiling " + network.name + ": the layers again as " + std::to_string(processors) +
             " one-processor gpipe runs at once (every stash held, every core missing its caches), for what holding stashes longer costs");
  }
  const BatchSampler sampler(data, network.batch, gpipe.microbatches, gpipe.minibatches, seed);
  TrainingOptions recording = options;
  recording.seed = seed;
  recording.record_layer_times = true;
  std::vector<TrainingRun> measured;
  try {
    measured = run_copies_at_once(run, graph, network, sampler, recording, processors, options.pin_cpus);
  } catch (const Error& e) {
    // A run the machine refuses (more than a processor's capacity): the table goes without the
    // figure, as without the footprint's; anything else is thrown.
    if (progress) progress(std::string("no stash far point: ") + e.what());
    return;
  }
  const Calibration far_table = calibration_from_runs(graph, network, measured, warm_up, wait_curve);
  const std::vector<std::vector<std::int32_t>> layers_of = forward_layers_by_processor(pipeline_graph);
  for (std::size_t p = 0; p < layers_of.size(); ++p) {
    const std::vector<std::int32_t>& layers = layers_of[p];
    double table_forward_s = 0, far_forward_s = 0, table_backward_s = 0, far_backward_s = 0;
    for (const std::int32_t l : layers) {
      const std::string& name = network.layers[static_cast<std::size_t>(l)].name;
      const LayerTimes &mine = calibration.layers.at(name), &there = far_table.layers.at(name);
      table_forward_s += mine.forward_s;
      far_forward_s += there.forward_s;
      table_backward_s += mine.fused_backward_s();
      far_backward_s += there.fused_backward_s();
    }
    if (!(table_forward_s > 0 && table_backward_s > 0)) continue;
    const double distance = p < timed.size() ? timed[p].distance_bytes : -1.0;
    for (const std::int32_t l : layers) {
      LayerTimes& times = calibration.layers.at(network.layers[static_cast<std::size_t>(l)].name);
      times.timed_stash_distance_bytes = distance;
      times.far_forward_factor = std::max(1.0, far_forward_s / table_forward_s);
      times.far_backward_factor = std::max(1.0, far_backward_s / table_backward_s);
    }
  }
  calibration.far_stash_distance_bytes = static_cast<std::int64_t>(std::llround(far[0].distance_bytes));
}

// Calibration::task_gap_s and pipeline_copy_seconds from `runs` of `graph` (after their first
// `skip_minibatches`): on each thread, from one task's end to the next's start where every input
// of the next had ended before (it did not wait: what is left is the executor's own step), less
// the time the thread spent reading the first's layer times (TrainingRun::layer_reading_s), the
// median of means; and per size, the copies the senders' threads made.
void record_task_gaps(const TaskGraph& graph, const std::vector<TrainingRun>& runs, std::int32_t skip_minibatches,
                      Calibration& calibration) {
  std::vector<double> gaps_s;
  for (const auto& run : runs) {
    if (run.result.tasks.size() != graph.tasks.size()) continue;
    const auto& times = run.result.tasks;
    for (const auto& ids : thread_sequences(graph, run)) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const Task& t = graph.tasks[static_cast<std::size_t>(ids[i])];
        const TaskTiming& time = times[static_cast<std::size_t>(t.id)];
        if (t.minibatch < skip_minibatches || i == 0) continue;
        const TaskTiming& before = times[static_cast<std::size_t>(ids[i - 1])];
        std::int64_t ready_cycles = 0;
        for (const auto& d : t.deps) ready_cycles = std::max(ready_cycles, times[static_cast<std::size_t>(d.task)].end_cycles);
        if (ready_cycles > before.end_cycles) continue;  // it waited for an input
        // Less what reading the first's layer times took, which a run that does not record them
        // does not spend (0.1 us a task on mlp: the gap came to 0.30 us with it, where the
        // validation runs' traces have 0.15-0.22).
        const double reading_s = run.layer_reading_s.size() == graph.tasks.size() ? run.layer_reading_s[static_cast<std::size_t>(ids[i - 1])] : 0.0;
        gaps_s.push_back(std::max(0.0, static_cast<double>(time.start_cycles - before.end_cycles) / graph.clock_hz - reading_s));
      }
    }
  }
  if (!gaps_s.empty()) calibration.task_gap_s = median_of_means(gaps_s);
  calibration.pipeline_copy_seconds.clear();
  add_pipeline_copies(graph, runs, skip_minibatches, calibration);
}

// Calibration::task_time_spread from `runs` of `graph` (after their first `skip_minibatches`):
// the processors' tasks grouped by what they compute (kind, layers, processor), each task's
// duration off its group's median, over that median; the median of those over every task.
void record_task_time_spread(const TaskGraph& graph, const std::vector<TrainingRun>& runs, std::int32_t skip_minibatches,
                             Calibration& calibration) {
  std::map<std::tuple<TaskKind, std::int32_t, std::int32_t, std::int32_t>, std::vector<double>> groups;  // durations, s
  for (const auto& run : runs) {
    if (run.result.tasks.size() != graph.tasks.size()) continue;
    for (const auto& t : graph.tasks) {
      if (t.placement != Placement::processor || t.minibatch < skip_minibatches) continue;
      const TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
      groups[{t.kind, t.first_layer, t.last_layer, t.resource}].push_back(
          static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz);
    }
  }
  std::vector<double> off;  // per task: |duration - its group's median| / that median
  for (const auto& [key, durations_s] : groups) {
    if (durations_s.size() < 2) continue;
    const double median_s = upper_median(durations_s);
    if (!(median_s > 0)) continue;
    for (const double s : durations_s) off.push_back(std::abs(s - median_s) / median_s);
  }
  if (!off.empty()) calibration.task_time_spread = upper_median(std::move(off));
}

}  // namespace

double median_of(std::vector<double> values) { return upper_median(std::move(values)); }
std::int64_t median_of(std::vector<std::int64_t> values) { return upper_median(std::move(values)); }

std::int64_t max_peak(const std::vector<std::int64_t>& peaks) {
  std::int64_t peak = 0;
  for (const auto bytes : peaks) peak = std::max(peak, bytes);
  return peak;
}

Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const TrainingRun& run,
                                 std::int32_t skip_minibatches, const WaitCurve& wait_curve) {
  return calibration_from_runs(graph, network, {run}, skip_minibatches, wait_curve);
}

Calibration calibration_from_runs(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                  std::int32_t skip_minibatches, const WaitCurve& wait_curve) {
  const std::size_t L = network.size();
  Calibration c;
  c.wait_curve = wait_curve;
  std::vector<std::map<TaskKind, std::vector<double>>> seconds(L);
  std::vector<double> load_s;  // the forwards' loads at the input
  for (const auto& run : runs) {
    if (run.layer_times.empty()) throw Error("internal: calibration from a run without layer times");
    // Per task: the wait before it on its processor (waits_before_cycles; kNoWait: none).
    const std::vector<std::int64_t> waits =
        wait_curve.extra_s_per_byte.empty() || run.result.tasks.size() != graph.tasks.size() ? std::vector<std::int64_t>()
                                                                            : waits_before_cycles(graph, run.result.tasks);
    for (const auto& time : run.layer_times) {
      const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
      if (t.minibatch < skip_minibatches) continue;  // warm-up: cold caches, first allocations
      if (time.layer == kInputLoadLayer) {
        load_s.push_back(time.seconds);
      } else if (time.layer == kGradientAssemblyLayer) {
        continue;  // record_gradient_assemblies
      } else {
        // Less what the wait before its task cost it, which a graph's engines charge apart.
        const std::int64_t wait = waits.empty() ? kNoWait : waits[static_cast<std::size_t>(t.id)];
        const double waited_s = wait == kNoWait ? 0.0 : static_cast<double>(wait) / graph.clock_hz;
        seconds[static_cast<std::size_t>(time.layer)][time.kind].push_back(
            std::max(0.0, time.seconds - own_wait_charge_s(graph, t, time, network, waited_s, c)));
      }
    }
  }
  c.concurrent = static_cast<std::int32_t>(runs.size());
  c.network = network.name;
  c.samples = graph.samples_per_microbatch;
  for (std::size_t l = 0; l < L; ++l) {
    auto& s = seconds[l];
    LayerTimes& t = c.layers[network.layers[l].name];
    t.forward_s = median_of_means(s[TaskKind::F]);
    t.activation_grad_s = median_of_means(s[TaskKind::BA]);
    t.weight_grad_s = median_of_means(s[TaskKind::BW]);
    if (!s[TaskKind::B].empty()) t.backward_s = median_of_means(s[TaskKind::B]);
    t.update_s = median_of_means(s[TaskKind::U]);
  }
  c.input_load_s = median_of_means(load_s);
  record_gradient_assemblies(graph, network, runs, skip_minibatches, c);
  fit_task_overheads(task_overheads(graph, runs, skip_minibatches), c);
  record_task_gaps(graph, runs, skip_minibatches, c);
  record_task_time_spread(graph, runs, skip_minibatches, c);
  return c;
}

std::vector<TaskOverhead> task_overheads(const TaskGraph& graph, const std::vector<TrainingRun>& runs,
                                         std::int32_t skip_minibatches) {
  std::vector<TaskOverhead> overheads;
  for (const auto& run : runs) {
    std::map<std::int32_t, double> layer_sum_s;  // per task
    for (const auto& time : run.layer_times) {
      const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
      if (t.minibatch < skip_minibatches) continue;
      // A fused B also records what a split BA and BW would cost: its own work is its B records.
      // A forward's load at the input and a backward's assembly of its output's gradient are
      // their own (input_load_s, assembly_s), not overhead.
      if (time.kind == t.kind) layer_sum_s[time.task] += time.seconds;
    }
    // What a task costs beyond its layers: payload bookkeeping, stashes, the steps between layers.
    // Timed in the unmarked twin where there is one: the marks' own cost is not the task's.
    const std::vector<TaskTiming>& task_times = run.unmarked_tasks.empty() ? run.result.tasks : run.unmarked_tasks;
    if (task_times.size() != graph.tasks.size()) throw Error("internal: a run's task times are not its graph's");
    for (const auto& [task, sum_s] : layer_sum_s) {
      const Task& t = graph.tasks[static_cast<std::size_t>(task)];
      const TaskTiming& time = task_times[static_cast<std::size_t>(task)];
      overheads.push_back({t.last_layer - t.first_layer + 1,
                           static_cast<double>(time.end_cycles - time.start_cycles) / graph.clock_hz - sum_s, t.kind, task});
    }
  }
  return overheads;
}

Runner with_unmarked_twins(Runner run) {
  return [run = std::move(run)](const TaskGraph& graph, const Network& network, const BatchSampler& sampler,
                                const TrainingOptions& options) {
    TrainingRun marked = run(graph, network, sampler, options);
    if (!options.record_layer_times) return marked;
    TrainingOptions unmarked = options;
    unmarked.record_layer_times = false;
    marked.unmarked_tasks = run(graph, network, sampler, unmarked).result.tasks;
    return marked;
  };
}

bool takes_unmarked_twins(const std::string& mode, bool on_gpu, int concurrent) {
  if (mode == "all") return true;
  if (mode == "none") return false;
  if (mode == "auto") return on_gpu && concurrent == 1;
  throw Error("--unmarked-twins must be auto, all or none, got '" + mode + "'");
}

void fit_task_overheads(const std::vector<TaskOverhead>& overheads, Calibration& calibration) {
  std::map<std::int32_t, std::vector<double>> by_layers;  // the line: tasks other than updates
  for (const auto& o : overheads) {
    if (o.kind != TaskKind::U) by_layers[o.layers].push_back(o.seconds);
  }
  calibration.task_overhead_s = 0;
  calibration.layer_overhead_s = 0;
  if (by_layers.empty()) return;
  const auto& [fewest, few_s] = *by_layers.begin();
  const auto& [most, many_s] = *by_layers.rbegin();
  const double few = median_of_means(few_s), many = median_of_means(many_s);
  if (most > fewest) calibration.layer_overhead_s = std::max(0.0, (many - few) / (most - fewest));
  calibration.task_overhead_s = std::max(0.0, few - calibration.layer_overhead_s * fewest);
  std::map<TaskKind, std::vector<double>> beyond_slope;  // per kind
  for (const auto& o : overheads) {  // an update is one step: it pays nothing per layer
    beyond_slope[o.kind].push_back(o.seconds - (o.kind == TaskKind::U ? 0.0 : calibration.layer_overhead_s * o.layers));
  }
  calibration.kind_overhead_s.clear();
  for (const auto& [kind, seconds] : beyond_slope) calibration.kind_overhead_s[kind] = std::max(0.0, median_of_means(seconds));
}

ConcurrentTiming parse_concurrent_timing(const std::string& name) {
  if (name == "pipeline") return ConcurrentTiming::pipeline;
  if (name == "copies") return ConcurrentTiming::copies;
  throw Error("concurrent timing must be pipeline or copies, got '" + name + "'");
}

double measure_handoff_s(int repeats, double idle_s, double spin_s) {
  // Two threads pass a token back and forth through a mutex and a condition variable per thread,
  // as a task's end wakes the thread of a task waiting on it. Each holds the token for `idle_s`
  // (busy, as a task would be) before passing it on, so that the other has slept that long: a
  // thread asleep longer takes longer to wake (an idle core, or a virtual CPU, goes into a deeper
  // halt). Steps add up every handoff, so the mean is kept, over the fastest 95% (a handoff the
  // machine preempted for milliseconds is the machine's noise, not the executor's cost).
  idle_s = std::clamp(idle_s, 0.0, 0.01);
  const int rounds = std::clamp(idle_s > 0 ? static_cast<int>(0.1 / idle_s) : repeats * 20, 30, std::max(30, repeats * 20));
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::condition_variable wake[2];
  // Whose turn: token % 2. Changed under the mutex; atomic, so that a spinning thread can read it
  // without the lock.
  std::atomic<int> token{0};
  Clock::time_point passed;
  const auto spin_for_turn = [&](int me) {  // as GraphExecution::spin_until_ready
    if (spin_s > 0) exec::spin_until([&] { return token.load(std::memory_order_acquire) % 2 == me; }, spin_s);
  };
  std::vector<double> latencies_s;
  const auto hold = [idle_s] {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(idle_s));
    while (Clock::now() < until) {
    }
  };
  const auto side = [&](int me) {
    for (int r = 0; r < rounds; ++r) {
      spin_for_turn(me);
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake[me].wait(lock, [&] { return token % 2 == me; });
        if (token > 0) latencies_s.push_back(std::chrono::duration<double>(Clock::now() - passed).count());
      }
      hold();
      std::lock_guard<std::mutex> lock(mutex);
      passed = Clock::now();
      token.fetch_add(1, std::memory_order_release);
      wake[1 - me].notify_one();
    }
  };
  std::thread other(side, 1);
  side(0);
  other.join();
  std::sort(latencies_s.begin(), latencies_s.end());
  latencies_s.resize(std::max<std::size_t>(1, latencies_s.size() * 95 / 100));
  double total = 0;
  for (const double latency : latencies_s) total += latency;
  return total / static_cast<double>(latencies_s.size());
}

double typical_task_s(const Calibration& calibration) {
  double forward_s = 0, backward_s = 0;
  for (const auto& [name, t] : calibration.layers) {
    forward_s += t.forward_s;
    backward_s += t.fused_backward_s();
  }
  // A P-processor run's tasks each span about 1/P of the layers (docs/cuda-executor.md, "Measured
  // on an H200": its hops took 85-99 us after waits under 1 ms, 148 us after waits over 3 ms).
  return (forward_s + backward_s) / 2 / std::max<std::int32_t>(1, calibration.concurrent);
}

Calibration profile_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                           const Runner& run, const std::function<void(const std::string&)>& progress,
                           int concurrent, const std::vector<int>& pin_cpus, bool time_footprint,
                           const std::vector<std::pair<std::int64_t, double>>& reuse_curve,
                           const WaitCurve& wait_curve, double span_s) {
  if (repeats < 1) throw Error("profile: repeats must be at least 1");
  if (concurrent < 1) throw Error("profile: concurrent copies must be at least 1");
  if (!(span_s >= 0)) throw Error("profile: a run's timed span must be at least 0 seconds");
  const ScheduleRequest request = make_request(config);
  // Every task kind of every layer, timed inside a real run: the one-processor sequential
  // schedule, each layer's part of each task recorded; its first half left out (warm-up).
  std::int32_t warm_up = profile_timed_minibatches(repeats, config.microbatches);
  GraphConfig sequential = profile_run_config(config, "sequential", 1, 2 * warm_up);
  const auto announce = [&](const std::string& why) {
    if (!progress) return;
    progress("profiling " + request.network.name + ": every layer's F, BA, BW, U in a one-processor run (" +
             std::to_string(request.network.batch / config.microbatches) + " samples per task, " +
             std::to_string(sequential.minibatches) + " minibatches" +
             (concurrent > 1 ? ", " + std::to_string(concurrent) + " copies at once" : std::string()) + ")" + why);
  };
  announce("");
  TrainingOptions options;
  options.seed = seed;
  options.record_layer_times = true;
  // `concurrent` copies of a run at once: they share the (read-only) graph, network and data.
  const auto run_copies = [&](const TaskGraph& graph, const BatchSampler& sampler) {
    return run_copies_at_once(run, graph, request.network, sampler, options, concurrent, pin_cpus);
  };
  TaskGraph graph = make_graph(sequential);
  auto sampler = std::make_unique<BatchSampler>(data, request.network.batch, sequential.microbatches, sequential.minibatches, seed);
  std::vector<TrainingRun> measured = run_copies(graph, *sampler);
  // A machine whose speed changes for tens of milliseconds at a time puts a short timed part in
  // one state or the other, where a longer run averages them (kOneProcessorTimingSpan_s): where
  // the timed part spans less than span_s of this run's steps, the run is made again with its
  // warm-up and timed part that long, and the table is timed in the second.
  const std::int32_t spanning = spanning_minibatches(span_s, measured.front().result.iteration_s);
  if (spanning > warm_up) {
    warm_up = spanning;
    sequential.minibatches = 2 * warm_up;
    graph = make_graph(sequential);
    announce(" again: its timed half spans at least " + std::to_string(static_cast<int>(std::lround(1e3 * span_s))) + " ms");
    sampler = std::make_unique<BatchSampler>(data, request.network.batch, sequential.microbatches, sequential.minibatches, seed);
    measured = run_copies(graph, *sampler);
  }
  Calibration calibration = calibration_from_runs(graph, request.network, measured, warm_up, wait_curve);
  calibration.source = "profile of " + request.network.name;
  calibration.timed_footprint_bytes = footprint_bytes(measured);
  calibration.reuse_extra_s_per_byte = reuse_curve;
  record_weight_reuse(calibration, graph, request.network, warm_up);
  if (time_footprint && concurrent == 1 && sequential.microbatches > 1) {
    time_footprint_slowdown(config, request.network, data, warm_up, seed, graph, measured, run_copies, progress, calibration);
  }
  // Sequential tasks each span the whole network: the line's other end from one-layer tasks.
  if (request.network.size() > 1) {
    fit_overheads_with_one_layer_tasks(config, request.network, 1, data, seed, graph, measured, warm_up, run_copies, progress,
                                       calibration);
  }
  return calibration;
}

std::optional<Calibration> profile_layers_in_pipeline(const GraphConfig& config, const Dataset& data, int repeats,
                                                      std::uint64_t seed, const Runner& run,
                                                      const std::function<void(const std::string&)>& progress,
                                                      int processors, const TrainingOptions& options, double span_s,
                                                      const std::vector<std::pair<std::int64_t, double>>& reuse_curve,
                                                      const WaitCurve& wait_curve,
                                                      bool time_far_point) {
  if (repeats < 1) throw Error("profile: repeats must be at least 1");
  if (processors < 2) throw Error("profile: a pipeline needs at least 2 processors");
  if (!(span_s >= 0)) throw Error("profile: a pipeline's warm-up span must be at least 0 seconds");
  const ScheduleRequest request = make_request(config);
  // As many microbatches per layer and kind as the one-processor profile, after as many warm-up:
  // the warm-up and the timed part are `warm_up` minibatches each.
  std::int32_t warm_up = profile_timed_minibatches(repeats, config.microbatches);
  GraphConfig pipeline = profile_run_config(config, kCalibrationPipelineSchedule, processors, 2 * warm_up);
  TaskGraph graph;
  try {
    graph = make_graph(pipeline);
  } catch (const Error& e) {  // too few layers for that many stages
    if (progress) progress("no " + std::to_string(processors) + "-processor " + pipeline.schedule + " run (" + e.what() + ")");
    return std::nullopt;
  }
  const auto announce = [&] {
    if (!progress) return;
    progress("profiling " + request.network.name + ": every layer's F, BA, BW, U where a " + std::to_string(processors) +
             "-processor " + pipeline.schedule + " run puts it (" + std::to_string(graph.samples_per_microbatch) +
             " samples per task, " + std::to_string(pipeline.minibatches) + " minibatches, the first " +
             std::to_string(warm_up) + " to warm up)");
  };
  announce();
  TrainingOptions timed = options;
  timed.seed = seed;
  timed.record_layer_times = true;
  timed.copy = 0;
  timed.copies = 1;
  auto sampler = std::make_unique<BatchSampler>(data, request.network.batch, pipeline.microbatches, pipeline.minibatches, seed);
  TrainingRun measured = run(graph, request.network, *sampler, timed);
  // Threads that start together after one ran alone run slow for their first milliseconds (docs/
  // executor.md, "A core after a sleep", and "Tables timed once the threads are awake"): where
  // the warm-up (and so the timed part) spans less than span_s of this run's steps, the run is
  // made again with both that long, and the table is timed in the second.
  // Up to kMostSpanMinibatches; a run already that long (or longer, as asked) is not made again.
  const std::int32_t spanning = spanning_minibatches(span_s, measured.result.iteration_s);
  if (spanning > warm_up) {
    warm_up = spanning;
    pipeline.minibatches = 2 * warm_up;
    graph = make_graph(pipeline);
    announce();
    sampler = std::make_unique<BatchSampler>(data, request.network.batch, pipeline.microbatches, pipeline.minibatches, seed);
    measured = run(graph, request.network, *sampler, timed);
  }
  Calibration calibration = calibration_from_run(graph, request.network, measured, warm_up, wait_curve);
  calibration.concurrent = processors;
  calibration.pipeline_schedule = pipeline.schedule;
  calibration.timed_footprint_bytes = footprint_bytes({measured});
  calibration.reuse_extra_s_per_byte = reuse_curve;
  record_weight_reuse(calibration, graph, request.network, warm_up);
  // What the other processors' work adds to a layer's time, from how its times vary with its
  // tasks' overlap in this run. A negative slope is the samples' noise (co-running does not speed
  // a core up): none.
  const CoRunFit co_run = fit_co_run(graph, measured, warm_up);
  if (std::isfinite(co_run.slope) && std::isfinite(co_run.share)) {
    calibration.co_run_slope = std::max(0.0, co_run.slope);
    calibration.co_run_share = std::clamp(co_run.share, 0.0, 1.0);
  }
  calibration.source = "profile of " + request.network.name + " in a " + std::to_string(processors) + "-processor " +
                       pipeline.schedule + " run";
  // The overhead line's other end from one-layer tasks, on as many processors.
  const ProfileRuns run_once = [&](const TaskGraph& g, const BatchSampler& s) {
    return std::vector<TrainingRun>{run(g, request.network, s, timed)};
  };
  fit_overheads_with_one_layer_tasks(config, request.network, processors, data, seed, graph, {measured}, warm_up, run_once,
                                     progress, calibration);
  if (time_far_point) {
    time_stash_far_point(config, request.network, data, seed, graph, pipeline.minibatches, warm_up, processors, run, timed,
                         progress, wait_curve, calibration);
  }
  return calibration;
}

}  // namespace pipetwin
