// Calibration from any executor (docs/design.md, "Executors"): every task kind of every layer
// timed by the executor on one processor inside a real run, and the executor's own cost per
// task. The CPU and CUDA profilers add what their copies cost.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

// The upper median (the middle value; of two middles, the larger), 0 when empty.
double median_of(std::vector<double> values);
std::int64_t median_of(std::vector<std::int64_t> values);  // of byte counts, kept whole
// The highest over processors of `peaks` (a Result's peaks per processor); 0 for none.
std::int64_t max_peak(const std::vector<std::int64_t>& peaks);

// What each task of `runs` (of `graph`, recorded with `record_layer_times`) took beyond its
// layers' recorded times, with the number of layers it spans and its kind. A run with an unmarked
// twin (TrainingRun::unmarked_tasks) gives each task's time from the twin, its layers' from itself.
struct TaskOverhead {
  std::int32_t layers = 1;
  double seconds = 0;
  TaskKind kind = TaskKind::F;
  std::int32_t task = -1;  // its id in the graph
};
std::vector<TaskOverhead> task_overheads(const TaskGraph& graph, const std::vector<TrainingRun>& runs,
                                         std::int32_t skip_minibatches);

// `run`, making every run asked for layer times twice: as asked (its layers marked), then again
// with the same options but no marks, whose task times it keeps in the first's
// TrainingRun::unmarked_tasks. Tables made with it fit what a task costs beyond its layers from
// runs that pay for no marks, as validation runs pay for none: a GPU's marks are events recorded
// around every layer's parts, each a host call (docs/cuda-executor.md). Runs without layer times
// are made once. Profiling takes about twice as long. profile_cpu and profile_cuda say so in the
// table (Calibration::overheads_from_unmarked_twins).
Runner with_unmarked_twins(Runner run);

// Whether a table takes its overheads from unmarked twins (with_unmarked_twins), as `mode` says:
// "all" (every table), "none" (none), or "auto": a GPU's one-processor table (`on_gpu`,
// `concurrent` 1) only. Why auto: on an H100 the one-processor rows were predicted 1.5-6.5% slow
// in every session while their tables took the marked runs' overheads, and within -1.7..+1.6%
// (mean 1.2%, against 3.7% beside it) with twins (resnet56, 2026-11-28, docs/cuda-executor.md);
// there a step's runs spread 0.1-0.5%. A CPU's marks are clock reads whose cost the runs' own
// differences outweigh, and the GPU's 8-processor twins fitted next to no overhead, so
// neither takes twins unless asked (docs/executor.md, "Tables from unmarked twins"). Throws for
// another mode.
bool takes_unmarked_twins(const std::string& mode, bool on_gpu, int concurrent);

// The line through the mean overheads (the median of up to 8 blocks' means, as layer times) of
// the tasks spanning the fewest and the most layers: calibration.task_overhead_s per task plus
// calibration.layer_overhead_s per layer in it (both >= 0). With one size of task, that is all
// per task. Updates are left out of the line (one step for all their layers). Then per task kind,
// what its tasks cost beyond that slope (the same mean of overhead - layer_overhead_s * layers,
// >= 0; an update's whole overhead): calibration.kind_overhead_s. With 8 samples or fewer each is
// a block: their median.
void fit_task_overheads(const std::vector<TaskOverhead>& overheads, Calibration& calibration);

// Per layer of `network`: LayerTimes::forward_one_layer_s from the forwards of one layer alone in
// `runs` of `graph` (a profile's one-layer run, after `skip_minibatches`): the median of means of
// their layer times, each first taken to the overlap the table was timed at where `calibration`
// has a co-run slope s and share o, times (1 + s o) / (1 + s x), x the share of its task the other
// processors were busy (other_busy_shares); less what the weight-reuse model charges that run's
// forwards of the layer beyond what it charged the table's. Layers without such forwards, and
// runs of another sample count than the table's, leave the table as it was.
void record_one_layer_forwards(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                               std::int32_t skip_minibatches, Calibration& calibration);

// Per layer of `network`: LayerTimes::weight_grad_dw_one_layer_s from the BWs of one layer alone
// in `runs` of `graph`, as record_one_layer_forwards does for forwards, of each BW's seconds past
// its way back to the linear output (LayerTime::to_linear_s), less the reuse model's extra on
// the layer's gradient sum (backward_gradient_s) over the table's. Only layers whose table has a
// fused B are given one; a layer whose table has no BA to tell the way back by (the network's
// first layer, whose to_linear_s() is 0) is given its whole one-layer BW, way back included.
void record_one_layer_weight_grads(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                   std::int32_t skip_minibatches, Calibration& calibration);

// Per layer of `network`, from the BAs of one layer split into parts by samples in `runs` of
// `graph` (LayerPipe's, each of fewer samples n than the table's S): the parts' dx (each part's
// seconds past its way back to the linear output, taken to the table's overlap as
// record_one_layer_forwards takes forwards, their median of means less the reuse model's extra on
// the layer's weights W over the table's), then LayerTimes::activation_grad_fixed_s, the line
// through that at n and the table's whole dx (BA_s less to_linear_s()) at S where it meets no
// samples, clamped to [0, the parts' dx], and LayerTimes::activation_grad_dx_one_layer_s, the
// line through the parts' dx at n with that intercept, at S. Only layers whose table tells the
// way back (a fused B) are given them.
void record_one_layer_activation_grads(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                       std::int32_t skip_minibatches, Calibration& calibration);

// The calibration table from a run recorded with `record_layer_times` (one processor): per layer
// and task kind the mean measured time (robust to stalls: the median of up to 8 blocks' means,
// the samples in the order taken), and per task what it took beyond its layers, likewise
// (task_overhead_s); the first `skip_minibatches` minibatches are left out as warm-up.
// Device, copy bandwidth and latency are left to the caller.
// A `wait_curve` (the CPU's, exec/cpu/wait_curve.hpp; empty: none) goes into the table
// (Calibration::wait_curve, the curve and its footprint), and each
// layer time is taken less what the curve charges its task for the wait its thread had before it,
// for at most the footprint of the task's bytes, its layer's share (schedule/wait_loss.hpp), so
// that a graph's engines, which charge every task for its own waits, do not charge the timed
// run's twice.
Calibration calibration_from_run(const TaskGraph& graph, const Network& network, const TrainingRun& run,
                                 std::int32_t skip_minibatches, const WaitCurve& wait_curve = {});
// The same from several runs of `graph` (copies run at once), their samples pooled.
Calibration calibration_from_runs(const TaskGraph& graph, const Network& network, const std::vector<TrainingRun>& runs,
                                  std::int32_t skip_minibatches, const WaitCurve& wait_curve = {});

// Seconds from one thread ending a task to another thread starting the task waiting on it: the
// mean (over the fastest 95%) of mutex / condition-variable handoffs to a thread that has waited
// `idle_s` (a longer sleep wakes slower), first spinning up to `spin_s` as the executor's threads
// do (TrainingOptions::handoff_spin_s). What each hop of a transfer costs beyond its copy.
double measure_handoff_s(int repeats, double idle_s, double spin_s = 0);

// How long a thread of a pipeline typically waits between its tasks, for measure_handoff_s: the
// mean of a one-processor forward and a fused backward of one microbatch, from the table, over
// the processors of the runs it is for (Calibration::concurrent): a stage's task.
double typical_task_s(const Calibration& calibration);

// Layer times and task overhead of `config`'s network from a one-processor sequential run of
// about `repeats` microbatches (after as many of warm-up: the run's first half is left out) by
// `run`; device, copy bandwidth and latency are left for the caller. With `concurrent` > 1, that many copies of the run go at once,
// each on threads of its own, and their samples are pooled (Calibration::concurrent). A short
// one-processor LayerPipe run (a task per layer) beside it splits the overhead into per task and
// per layer (fit_task_overheads), and a short zb-h1 run times split tasks over a stage
// (Calibration::stage_kind_overhead_s). `pin_cpus` (empty: none): copy k's threads run on CPU
// pin_cpus[k mod size], as processor k's would in a pinned run (TrainingOptions::pin_cpus).
// The table records the sequential run's footprint (Calibration::timed_footprint_bytes); with
// `time_footprint`, one processor and more than one microbatch, a one-processor gpipe run as long
// times what a larger footprint costs (Calibration::footprint_slowdown). A `reuse_curve` (the
// CPU's, exec/cpu/reuse_curve.hpp; empty: none) goes into the table with what the weight-reuse
// model charges the timed run's layers (record_weight_reuse), and the footprint figure is taken
// net of what that model says gpipe's order gains or loses in the caches. A `wait_curve` goes into
// the table as calibration_from_runs puts it. Where the sequential run's timed part spans less
// than `span_s` of its steps (0: any), it is made again with its warm-up and timed part that long
// (up to kMostSpanMinibatches each), the table is timed in the second, and the gpipe run is as long.
Calibration profile_layers(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                           const Runner& run, const std::function<void(const std::string&)>& progress,
                           int concurrent = 1, const std::vector<int>& pin_cpus = {}, bool time_footprint = false,
                           const std::vector<std::pair<std::int64_t, double>>& reuse_curve = {},
                           const WaitCurve& wait_curve = {}, double span_s = 0);

// How long the timed part of a CPU table's one-processor run (and its warm-up) lasts at least
// (profile_layers' span_s; also each copy's where `--concurrent-timing copies` runs copies at
// once). Measured on a 2-vCPU AMD EPYC VM on 2026-11-30 (docs/executor.md, "A table timed as long
// as a run"): its steps ran about 20% slower for stretches of tens of milliseconds at a time.
// mlp's table, timed over 16 minibatches (15 ms), predicted a one-processor step of 1.00 ms or
// more (the fast state: 0.90-0.95 ms) in 4 to 14 of 30 rounds in seven of eight validations (1
// in the eighth), where the runs (64 timed steps, about 60 ms) did in 1 to 5; timed over about 60
// ms (256 repeats), in 3 and 1 of 30. Not fitted: a tenth of a second, a round figure above the
// 60 ms that measured so.
inline constexpr double kOneProcessorTimingSpan_s = 100e-3;

// Microbatches a profile times per layer and task kind unless told otherwise (`--repeats`); with
// 4 microbatches a minibatch, 16 minibatches after the warm-up one, so 16 samples of each update.
// With 16 (4 minibatches), mlp's validate (60 and 21 rounds, one after the other, 2026-11-25) had
// a mean step error of 3.8% against 2.9% and a speedup error of 7.0% against 5.6%, its
// one-processor rows predicted 1-3% slower (docs/executor.md, "Many rounds, and tables timed in a
// pipeline").
inline constexpr int kDefaultProfileRepeats = 64;

// How a table for P >= 2 processors times its layers, on any executor: in a P-processor pipeline
// (profile_layers_in_pipeline), or as P copies of a one-processor run at once (profile_layers).
enum class ConcurrentTiming { pipeline, copies };
ConcurrentTiming parse_concurrent_timing(const std::string& name);  // "pipeline" or "copies"

// The schedule a table for P processors is timed in (profile_layers_in_pipeline).
inline constexpr const char* kCalibrationPipelineSchedule = "1f1b";

// How long a pipeline profile's warm-up, and its timed part, last at least (profile_layers_in_pipeline).
// Measured on the 2-vCPU AVX-512 machine on 2026-11-27 (docs/executor.md, "Tables timed once the
// threads are awake"): a 1f1b run of mlp at P = 2 started right after a one-processor profile did
// 21% more layer work per minibatch than later over its first 3.5 ms, 2-3% more up to 13 ms, and
// was within 1-2% of its later value from about 20 ms on (the median of 10 runs).
inline constexpr double kPipelineTimingSpan_s = 25e-3;
// The most minibatches either part takes for that span (a network of microsecond steps).
inline constexpr std::int32_t kMostSpanMinibatches = 1024;

// Layer times and task overhead of `config`'s network where a pipeline of `processors` runs them:
// a kCalibrationPipelineSchedule run of about `repeats` microbatches per layer (after as many of
// warm-up), every layer's part of every task timed on the processor that runs it
// (Calibration::pipeline_schedule), with `options` (the runs' spin, transfer threads and
// pinning; record_layer_times is set here). Where that run's warm-up or its timed part spans
// less than `span_s` of its steps, it is made again with both at least that long (up to
// kMostSpanMinibatches each), and the second run is the one timed. The overhead line is fitted to
// its tasks and to those of a short `layerpipe` run on as many processors (a task per layer); a
// short zb-h1 run on as many times split tasks over a stage (Calibration::stage_kind_overhead_s).
// Device, copies and handoffs are left for the caller. Empty where the network cannot be cut into
// that many stages (the reason goes to `progress`); a run's errors are thrown. A `reuse_curve` and a
// `wait_curve` go into the table as profile_layers puts them. With `time_far_point` (CPUs), the
// network also runs as one-processor gpipe on every processor's thread at once, for the stash
// term (Calibration::far_stash_distance_bytes).
std::optional<Calibration> profile_layers_in_pipeline(const GraphConfig& config, const Dataset& data, int repeats,
                                                      std::uint64_t seed, const Runner& run,
                                                      const std::function<void(const std::string&)>& progress,
                                                      int processors, const TrainingOptions& options,
                                                      double span_s = kPipelineTimingSpan_s,
                                                      const std::vector<std::pair<std::int64_t, double>>& reuse_curve = {},
                                                      const WaitCurve& wait_curve = {},
                                                      bool time_far_point = false);

}  // namespace pipetwin
