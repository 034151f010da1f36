// A calibration table (docs/design.md, "Executors"): what an executor measured for every task kind of every layer
// on one processor, plus its per-task overhead and its copy bandwidth. Attached to a hardware
// profile, it replaces the roofline: a layer's F / BA / BW / B take the measured seconds (scaled
// linearly in samples when a task has a different microbatch), a U the measured seconds, and
// transfers the measured bandwidth. Written by `pipetwin profile`, read by `--calibration`.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

struct LayerTimes {
  double forward_s = 0;
  double activation_grad_s = 0;  // a BA on its own (back through pooling, ReLU, batch norm, then dx)
  double weight_grad_s = 0;      // a BW on its own (back through the same, then dW)
  double backward_s = -1;        // a fused B, which goes back through them once; -1: not measured
  double update_s = 0;
  // The way back to the linear output (of BA and BW: BA_s + BW_s - B_s) taken again, by a
  // one-layer BA part or BW right after another of its layer and microbatch on one processor, its
  // data in cache (schedule/warm_to_linear.hpp), apart for the two kinds: a BW after a layer's BA
  // parts goes back a third time, warmer still. -1: not measured.
  double activation_grad_to_linear_again_s = -1;
  double weight_grad_to_linear_again_s = -1;
  // Of a BA's work beyond the way back to the linear output (its dx), the seconds that do not
  // shrink with its samples (the weights read whole, a kernel's start): what a LayerPipe BA part
  // of fewer samples, timed in the profile's one-layer run, cost beyond its share of the whole
  // BA's, per the line through the two. A part of s of the table's S samples costs this plus
  // (dx - this) s / S. In [0, the part's dx]; -1: not measured.
  double activation_grad_fixed_s = -1;
  // The dx of a whole microbatch (the table's samples) by a BA of one layer split into parts
  // (LayerPipe's): the line through the profile's one-layer parts' dx at their samples, taken to
  // the table's overlap and weight reuse as forward_one_layer_s is, with activation_grad_fixed_s
  // where it meets no samples, at the table's samples. Where that line also goes through the
  // table's whole dx (BA_s less to_linear_s()) it is that; where activation_grad_fixed_s was
  // clamped it is not. A one-layer BA's parts share it in place of the whole-network tasks' dx
  // (since 2026-11-30, thirty-seventh session: on mlp a part of 8 of 16 samples took 0.36 of
  // fc2's whole dx, and LayerPipe's BA parts ran 10-27% under their price in every validation,
  // docs/executor.md, "The dx of one layer"). -1: not measured (older tables, tables without a
  // fused B, layers without parts).
  double activation_grad_dx_one_layer_s = -1;
  // The gradient at this layer's output assembled from the slices of the next layer's split BA
  // (LayerPipe's parts), by the one-layer backward that assembles it (schedule/
  // gradient_assembly.hpp): a buffer of the whole microbatch's gradient filled from the parts,
  // timed apart in the profile's one-layer run, at the table's samples. -1: not measured.
  double assembly_s = -1;
  // What the reuse model (schedule/weight_reuse.hpp) priced this layer's weight accesses at in the
  // run the table was timed in: the mean over that run's steady-state tasks of the seconds its
  // weights W (read by a forward, and by a backward for its input gradient), their gradient sum
  // dW (a backward's) and an update's two blocks (each) cost beyond a read from the core's cache,
  // by Calibration::reuse_extra_s. A graph's task is charged its own accesses' figure less these,
  // so that the table's times stand for an order whose weights stay in the caches as long as the
  // timed one's. -1: not computed (older tables, GPUs, a layer without parameters).
  double forward_weights_reuse_s = -1;
  double backward_weights_reuse_s = -1;
  double backward_gradient_reuse_s = -1;
  double update_reuse_s = -1;
  // The forward in a task of this layer alone: timed in the profile's one-layer (LayerPipe) run
  // on the table's processors, less what the weight-reuse model
  // (schedule/weight_reuse.hpp) says that run's order gained or lost on the layer's weights
  // against the table's, so that the reuse charge applies to it as to forward_s. A forward that
  // is the only layer of its task is priced by it: such tasks ran resnet8's block-first
  // convolutions 18-24% faster than the table's whole-network tasks, most likely by the memory the
  // heap hands their outputs (docs/executor.md, "Forwards of one layer"). Tables for two or more
  // processors take it from their own one-layer run, each forward taken to the overlap the table
  // was timed at by co_run_slope and co_run_share (since 2026-11-30: LayerPipe's second processor's
  // forwards ran 7-10% over the 1f1b-timed table on resnet8, docs/executor.md, "Forwards of one
  // layer on two processors"). -1: not measured (older tables).
  double forward_one_layer_s = -1;
  // A BW alone in its task (LayerPipe's), its work past the way back to the linear output (the
  // gradient sum dW): timed in the same one-layer run and taken to the table's overlap and weight
  // reuse as forward_one_layer_s is. A one-layer BW is priced at to_linear_s() plus this (and its
  // way back taken again where warm_to_linear.hpp says so), in place of weight_grad_s, which was
  // timed in whole-network tasks (since 2026-11-30, thirty-sixth session: LayerPipe's BWs on
  // resnet8's first processor at P = 2 ran 2-10% over that price, docs/executor.md, "A BW of one
  // layer"). At the network's first layer, which has no BA (to_linear_s() is 0), the whole
  // one-layer BW, its way back included (since 2026-12-01, forty-first session). -1: not measured
  // (older tables, tables without a fused B).
  double weight_grad_dw_one_layer_s = -1;
  // The way back to the linear output the first time, by a one-layer BA part (LayerPipe's first
  // part of a layer and microbatch): timed in the same one-processor one-layer run, in place of
  // to_linear_s() (BA + BW - B of the table's whole-network tasks) for such parts. On resnet8 it
  // took 4-27% less than to_linear_s() on the six convolutions with a BA, about as long as the way
  // back taken again (docs/executor.md, "Forwards of one layer"). -1: not measured (tables for
  // two or more processors, whose one-layer run's parts also hold the other processors' work;
  // older tables).
  double activation_grad_to_linear_one_layer_s = -1;
  // The stash term (Calibration::far_stash_distance_bytes): the stash reuse distance
  // (schedule/stash_reuse.hpp) of the processor that ran this layer in the run the table was timed
  // in, in bytes, and what that processor's forwards and backwards (its layers' F, and B or BA +
  // BW, summed) took at the far point over this table's, at least 1. -1: not measured (tables
  // not timed in a pipeline, GPUs, older tables).
  double timed_stash_distance_bytes = -1;
  double far_forward_factor = -1;
  double far_backward_factor = -1;
  // Of a BA or BW; -1 for other kinds.
  double to_linear_again_s(TaskKind kind) const {
    return kind == TaskKind::BA ? activation_grad_to_linear_again_s
           : kind == TaskKind::BW ? weight_grad_to_linear_again_s
                                  : -1.0;
  }
  // The way back to the linear output, which a split BA and a BW each take and a fused B once:
  // BA + BW - B, clamped to [0, BA]; -1 where no fused B was measured.
  double to_linear_s() const {
    return backward_s >= 0 ? std::clamp(activation_grad_s + weight_grad_s - backward_s, 0.0, activation_grad_s) : -1.0;
  }
  // What a fused B costs: the measured time, or BA + BW where the table has none.
  double fused_backward_s() const { return backward_s >= 0 ? backward_s : activation_grad_s + weight_grad_s; }
};

// What a wait costs the work after it, per byte that work touches (Calibration::wait_curve): as
// a CPU profile measures it, by timing work over a footprint right after its thread spun for each
// wait, against the same work back to back (exec's measure_wait_curve). On a virtual machine
// whose host runs other work on a core whose vCPU waits, the work after a wait refills its caches
// and competes for them (docs/executor.md, "Waits that cost the caches"): on the 2-vCPU Intel Xeon
// of 2026-11-29 about 15-60 ps a byte after 5 ms and 100-140 after 20 ms.
struct WaitCurve {
  // Waits in seconds ascending, extra seconds per byte. Empty: not measured (older tables, GPUs):
  // waits cost nothing.
  std::vector<std::pair<double, double>> extra_s_per_byte;
  // The footprint it was measured over (8 MiB in exec/cpu/profiler.cpp): a task is charged for at
  // most that many of its bytes (Calibration::wait_charged_bytes), since a wait can take from the
  // caches no more than they held, and the curve says nothing of bytes beyond what it timed (since
  // 2026-11-30, thirty-sixth session: resnet8's backwards of 15-23 MiB were charged for all of
  // them and ran 2-8% under their price after waits of 5 ms or more, docs/executor.md, "Waits over
  // a footprint"). 0: not known (older tables): every byte is charged.
  std::int64_t footprint_bytes = 0;
};

struct Calibration {
  std::string device;             // "cpu" or "cuda"
  std::string device_name;        // what it ran on, for the record
  std::string network;            // the network it was measured on
  std::int64_t samples = 1;       // samples per task when measured
  // A time the table measured per task of `samples` samples, for a task of `task_samples`: the
  // layers' times, the input's load and the way back to a linear output all scale so.
  double scaled_s(double seconds, std::int64_t task_samples) const {
    return seconds * (static_cast<double>(task_samples) / static_cast<double>(samples));
  }
  // Copies of the work timed at once, one per thread (1: alone). A table for P processors on one
  // machine is taken with P copies, so that it holds what they cost each other: a shared cache
  // and memory bandwidth, a lower all-core clock, SMT or a hypervisor's siblings.
  std::int32_t concurrent = 1;
  // Empty: the layers were timed alone, or as `concurrent` copies of a one-processor run. Else the
  // schedule of the `concurrent`-processor run they were timed in, each on the processor that ran
  // it: a pipeline's own conditions (the other processors' work, its data crossing cores, the
  // caches each processor has for its share of the network), which P copies do not have.
  std::string pipeline_schedule;
  // With pipeline_schedule: what a layer's time grew by, per unit of the other processors' busy
  // share of its task, in that run (a fraction of its time with them idle; fit_co_run in exec/,
  // >= 0), and the mean share of the layer times the table holds (in [0, 1]). -1: not measured
  // (older tables, copies). A graph whose processors overlap by a share o may take the table's
  // compute times times (1 + slope o) / (1 + slope share) (validate does).
  double co_run_slope = -1;
  double co_run_share = -1;
  // The bytes the timed run's buffers held while it computed: the largest steady-state step peak
  // of its processors (or copies) of what their tasks other than updates held
  // (Result::step_compute_peak_memory_bytes; tables before 2026-11-27 hold the step peak, updates
  // included) (0: not recorded). A one-processor table is timed in a sequential run, one
  // microbatch's stash at a time.
  std::int64_t timed_footprint_bytes = 0;
  // What holding more costs the compute (the caches it pushes the tasks' data out of): a
  // one-processor CPU profile also runs the network under one-processor gpipe, every microbatch's
  // stash held at once (footprint_large_bytes against the sequential run's footprint_small_bytes),
  // and records how much longer its forwards and backwards took over the sequential run's, whole
  // tasks, as a fraction (>= 0; -1: not measured, older tables and GPUs). On the 2-vCPU AVX-512
  // machine lenet5's gpipe tasks ran 0-4% slower holding 6 MB than sequential's holding 1.9 MB, and
  // 8-10% holding 22 MB (docs/executor.md, "What a footprint costs").
  double footprint_slowdown = -1;
  std::int64_t footprint_small_bytes = 0;
  std::int64_t footprint_large_bytes = 0;
  // The slowdown at a footprint of `bytes`: linear from 0 at footprint_small_bytes to
  // footprint_slowdown at footprint_large_bytes, and held at those ends; 0 where not measured.
  double footprint_slowdown_at(std::int64_t bytes) const {
    if (footprint_slowdown < 0 || footprint_large_bytes <= footprint_small_bytes) return 0;
    const double share = static_cast<double>(bytes - footprint_small_bytes) /
                         static_cast<double>(footprint_large_bytes - footprint_small_bytes);
    return footprint_slowdown * std::clamp(share, 0.0, 1.0);
  }
  // The factor a table timed at a footprint of `timed_bytes` takes for a graph that holds `bytes`:
  // (1 + slowdown at bytes) / (1 + slowdown at timed_bytes). 1 where either is unknown (0 bytes).
  double footprint_factor(std::int64_t bytes, std::int64_t timed_bytes) const {
    if (bytes <= 0 || timed_bytes <= 0) return 1;
    return (1 + footprint_slowdown_at(bytes)) / (1 + footprint_slowdown_at(timed_bytes));
  }
  // The stash term's far point: a table timed in a pipeline on a CPU also runs the network as
  // one-processor gpipe on every one of its cores at once (every microbatch's stash held, every
  // core missing its caches at once), and records per layer what its forwards and backwards took
  // there over the pipeline's (LayerTimes::far_forward_factor, far_backward_factor), and here
  // that run's stash reuse distance, in bytes (0: not measured). A row's processor whose
  // stashes wait longer than the timed run's is priced between the two (stash_far_share): on
  // resnet8 at P = 2 gpipe's and zb-h1's second processors (52-65 MiB against 1f1b's 12) ran
  // their forwards 9-20% over the table, where 1f1b's and pipedream's ran at it (docs/executor.md,
  // "Where gpipe's time at P = 2 goes").
  std::int64_t far_stash_distance_bytes = 0;
  // The CPUs the profiling process could run on (0: not recorded). A graph with at least as many
  // processors as this runs a compute thread on every core, so that a transfer's copy, made by a
  // link thread, takes its time from a processor (charge_copies_to_cores, schedule/).
  std::int32_t cores = 0;
  // The MPI ranks the table was profiled across (profile --distributed; 1: one process). The graph
  // builder then knows which transfers are messages between ranks (rank_layout.hpp).
  std::int32_t ranks = 1;
  // The overheads below (task_overhead_s, layer_overhead_s, kind_overhead_s,
  // stage_kind_overhead_s) were fitted from unmarked twins of the timed runs (exec's
  // with_unmarked_twins): each task's time in a run without its layers' marks, less its layers'
  // times in the marked run. False: from the marked runs alone.
  bool overheads_from_unmarked_twins = false;
  double task_overhead_s = 0;     // per task, beyond its layers' times (the engine's own cost)
  double layer_overhead_s = 0;    // and per layer in a task other than an update (between layers)
  // Per task kind the profile timed apart (F, B, BA, BW; empty in older tables): what a task of
  // that kind costs beyond its layers and layer_overhead_s, in place of task_overhead_s. A
  // forward loads, stashes and keeps its output, a split BA keeps its gradients for its BW: one
  // constant for all kinds put mlp's forwards 3-8% over and its split BAs 15-24% under it.
  std::map<TaskKind, double> kind_overhead_s;
  // The per-task overhead of a task of `kind`: kind_overhead_s's, else task_overhead_s.
  double task_overhead_s_of(TaskKind kind) const {
    const auto it = kind_overhead_s.find(kind);
    return it == kind_overhead_s.end() ? task_overhead_s : it->second;
  }
  // kind_overhead_s's split BA and BW are LayerPipe's one-layer tasks' (the only run that times
  // them splits them per layer). Split tasks that span their stage (zero bubble's) have their own,
  // timed in a short zb-h1 run (BA, BW; empty in older tables): at P = 2 on mlp LayerPipe's BAs
  // cost 1.4-2.1 us beyond their layers and zb-h1's 0.55-0.8 (docs/executor.md, "Split tasks
  // that span their stage").
  std::map<TaskKind, double> stage_kind_overhead_s;
  // The per-task overhead of a task of `kind` that spans its stage: stage_kind_overhead_s's, else
  // task_overhead_s_of(kind).
  double stage_task_overhead_s_of(TaskKind kind) const {
    const auto it = stage_kind_overhead_s.find(kind);
    return it == stage_kind_overhead_s.end() ? task_overhead_s_of(kind) : it->second;
  }
  // What a forward at the network's input spends loading its microbatch (the samples; their labels
  // too where it is also the output's), for `samples` samples, scaled as a layer's time: charged to
  // every F whose first layer is the network's first, on top of its layers (0: not measured). A
  // pipeline's first stage pays it, the others do not: as one per-kind constant it put mlp's first
  // stage's forwards 8-10% over the table and the second's 12-17% under.
  double input_load_s = 0;
  double copy_bytes_per_s = 0;    // transfers, offload and reload (0: keep the profile's links)
  // One thread's copy of a buffer of each size, measured (bytes ascending, seconds): copies that
  // fit a core's caches run several times faster than copy_bytes_per_s, which a large copy gives.
  // Empty: not measured.
  std::vector<std::pair<std::int64_t, double>> copy_seconds;
  // Seconds to copy `bytes` by copy_seconds (linear between its points, at the rate of the
  // nearest point beyond them), else at copy_bytes_per_s; -1 when neither is known.
  double copy_s(std::int64_t bytes) const;
  // A copy made by one thread within its process: the sender's share of a transfer (the copy
  // charged to its core) and offload and reload. 0: copy_bytes_per_s, which it is in one process;
  // across ranks (profile --distributed) copy_bytes_per_s is a whole message's, packed, sent and
  // unpacked, and this the profile's local copy.
  double core_copy_bytes_per_s = 0;
  // Across ranks: a message's cost to the cores, in thread CPU seconds, fixed plus its bytes at a
  // rate: the sending rank's (packing and posting it) and the receiving rank's (taking it from
  // MPI and unpacking it). 0: not measured.
  double message_send_core_s = 0, message_send_core_bytes_per_s = 0;
  double message_receive_core_s = 0, message_receive_core_bytes_per_s = 0;
  double copy_latency_s = -1;     // per transfer hop, beyond the copy (< 0: keep the profile's)
  // One thread's wake-up by another, after it slept about a task (< 0: not measured). A transfer
  // a link thread copies costs two (in copy_latency_s, which on a GPU also holds the copy's round
  // trip); one its sender copies, one. Timed apart, the link thread's is paid only when the link
  // waited, and the reader's holds the link no longer (LinkSpec::wake_s, delivery_s).
  double handoff_s = -1;
  // How long the threads of the handoff above spun before they slept (the runs' --handoff-spin-us;
  // 0: they slept at once). A handoff timed with a spin is that of runs with the same spin.
  double handoff_spin_s = 0;
  // handoff_s, or for a table without it, half its copy_latency_s (which the CPU profile measured
  // as two handoffs); < 0 when neither is known.
  double one_handoff_s() const { return handoff_s >= 0 ? handoff_s : copy_latency_s >= 0 ? copy_latency_s / 2 : -1; }
  // What a processor's thread spends between two of its tasks when the second's inputs are
  // already there (the executor marking the first done, waking its readers, taking the next):
  // measured in the profile's runs as the median of means of those gaps, charged after every
  // processor task and every copy a sender's thread makes (< 0: not measured). On mlp's tasks of
  // 3-45 us the CPU executor's is about 0.3 us, and without it every P = 2 replay ran 1-3% fast.
  double task_gap_s = -1;
  // The gap the cost model charges: task_gap_s, or 0 where it was not measured.
  double charged_task_gap_s() const { return std::max(0.0, task_gap_s); }
  // How far the timed run's tasks strayed from their like (the same kind, layers and processor):
  // the median over its processors' tasks after the warm-up of each one's duration off its
  // like's median, over that median (a fraction; < 0: not measured). What a run's phases between
  // processors vary by, for peaks that hang on them (step_peak_over_phases in exec/).
  double task_time_spread = -1;
  // The copies the senders' threads made in the pipeline run this table was timed in, and those
  // of other sizes its one-layer LayerPipe run on as many processors made (bytes ascending, the
  // median of means of their measured durations; empty: a table timed without such runs). A
  // transfer copied by its sender there is not a copy in a row (copy_seconds): it also allocates
  // and accounts its buffer, and its lines may be the reader's core's. mlp's 16 KiB took 0.6-1.2
  // us there against 0.2 us in a row; resnet8's 2 MiB 62 us against 210 us.
  std::vector<std::pair<std::int64_t, double>> pipeline_copy_seconds;
  // What a sender's copy in a pipeline costs beyond copy_s(bytes): the median over
  // pipeline_copy_seconds' sizes of their seconds less copy_s, at least 0; 0 without them.
  double pipeline_copy_extra_s() const;
  // A copy of `bytes` made by its sender's thread in a pipeline: what the profile's pipeline runs'
  // copies of that size took where they made some (pipeline_copy_seconds), else copy_s plus
  // pipeline_copy_extra_s; -1 where copy_s is not known. resnet8's 2 MiB activations took 62 us
  // there where copies in a row of that size take 210 us, mlp's 16 KiB 0.81 us where they take 0.2.
  double sender_copy_s(std::int64_t bytes) const;
  // What reading data costs beyond a read from the core's own cache, by how much other data the
  // core touched since it last touched it (its working set: the distinct bytes touched since, its
  // own included): working-set bytes ascending, extra seconds per byte read, measured by re-reading
  // a block after a sweep over others (exec's measure_reuse_curve). On the 2-vCPU AVX-512 machine
  // (2 MiB of L2 a core) 0 up to about 1 MiB, 23 ps a byte from about 4 MiB. Empty: not measured.
  std::vector<std::pair<std::int64_t, double>> reuse_extra_s_per_byte;
  // Extra seconds to read `bytes` whose working set was `working_set_bytes` (< 0: never touched
  // before, the curve's last point), linear between the curve's points and held beyond its ends;
  // 0 without a curve.
  double reuse_extra_s(std::int64_t working_set_bytes, std::int64_t bytes) const;
  // What a wait costs the work after it (in the file: `wait_extra_s_per_byte` and
  // `wait_curve_footprint_bytes`). The layer times of a table timed in a pipeline run have each
  // task's own charge taken out.
  WaitCurve wait_curve;
  // Extra seconds for work over `bytes` after a wait of `wait_s`: linear between the curve's
  // points, from 0 at no wait, held beyond its last; 0 without a curve or for no wait.
  double wait_extra_s(double wait_s, std::int64_t bytes) const;
  // Of a task's `bytes`, those a wait is charged for: at most the curve's footprint where known.
  std::int64_t wait_charged_bytes(std::int64_t bytes) const {
    return wait_curve.footprint_bytes > 0 ? std::min(bytes, wait_curve.footprint_bytes) : bytes;
  }
  std::map<std::string, LayerTimes> layers;  // by layer name
  std::string source;             // the file it came from
};

// The table for tasks that run while, on average, a fraction `weight` of the other processors is
// busy: every compute time (each layer's F, BA, BW, B and U, the task and layer overheads)
// linear between the table taken alone (weight 0) and the one taken with every processor busy
// (`together`, P copies at once: weight 1); so is the gap between tasks where both timed it (else
// the one that did). The copies' and links' figures are `together`'s.
// Throws for a weight outside [0, 1] or a layer the alone table lacks.
Calibration blend_calibrations(const Calibration& alone, const Calibration& together, double weight);

// A graph's share of the way from this table's stash reuse distances to the far point's, in [0,
// 1]: per processor p, x_p = ln(d_p / t_p) / ln(far / t_p), where d_p is the processor's
// distance in the graph (`distance_bytes[p]`, -1: none) and t_p the timed distance of the layers
// it runs (`timed_distance_bytes[p]`), every distance at least `floor_bytes` (under it data is
// as warm as it gets); the largest x_p, for every processor: where one core misses its caches,
// the others' misses cost more (a convolution with its data pushed out lost 7-14% alone and 21-47%
// while the other core streamed through memory; docs/executor.md, "Where gpipe's time at P = 2
// goes"). 0 without a far point, or where no processor's stashes wait longer than the timed run's.
double stash_far_share(const std::vector<double>& distance_bytes, const std::vector<double>& timed_distance_bytes,
                       double far_bytes, double floor_bytes);

// The distance under which a re-read costs about nothing: the working set at which
// reuse_extra_s_per_byte first reaches half its far end's figure (the core's cache, as measured),
// or 1 MiB (half the 2 MiB L2 of the machines the term was built on) without a curve.
double stash_distance_floor_bytes(const Calibration& calibration);

// `calibration` with each layer's compute times moved `share` of the way to the far point's
// (LayerTimes::far_forward_factor for its forwards, far_backward_factor for its backward times);
// layers without a far point, updates, copies and links as they are. Throws for a share outside
// [0, 1].
Calibration with_far_share(const Calibration& calibration, double share);

// `calibration` with every compute time (each layer's F, BA, BW, B, U and ways back taken again,
// the input's load and the task overheads) times `factor` (> 0); copies and links as they are.
// Throws for a factor that is not a positive finite number.
Calibration with_compute_scaled(const Calibration& calibration, double factor);

Calibration calibration_from_json_text(const std::string& text, const std::string& source);
Calibration load_calibration(const std::string& path);
std::string calibration_to_json_text(const Calibration& calibration);

// Seconds of `kind` (F, BA, BW, B, U) for `layer` over `samples` samples (B: the measured fused
// backward, or BA + BW where the table has none); throws naming the layer when the table lacks it.
double calibrated_seconds(const Calibration& calibration, const Layer& layer, TaskKind kind, std::int64_t samples);

// Throws unless every layer of `network` is in the table.
void check_calibration_covers(const Calibration& calibration, const Network& network);

}  // namespace pipetwin
