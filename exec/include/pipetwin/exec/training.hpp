// What every executor (the CPU one, the CUDA one) takes and gives back: training options, the
// measured run (Result, losses, weights), the initial weights every executor and reference
// starts from, and the check that a graph, a network and data go together. Weights on the host
// are flat float vectors per layer (W | bias | gamma | beta).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/exec/ranks.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

using HostWeights = Eigen::VectorXf;  // one layer's parameters on the host

enum class TransferThreads { automatic, links, senders };

// TrainingOptions::handoff_spin_s, left to the executor: automatic_handoff_spin_s.
constexpr double kAutomaticHandoffSpin = -1;
// How long a spinning thread spins, where it may (automatic_handoff_spin_s): longer than the
// waits between the tasks of the networks the CPU executor trains here (resnet8's tasks take
// 10-50 ms), so that a core is not left to halt, after which its next task runs slower
// (docs/executor.md, "Handoffs"; 2 ms until 2026-11-25).
constexpr double kHandoffSpinWhereEveryCoreHasAThread_s = 100e-3;
// The automatic spin of a CPU run of `processors` processors in one process: where they are two or
// more and as many as the CPUs it may run on (each a core of its own, and senders copying the
// transfers, so no link thread competes for one), kHandoffSpinWhereEveryCoreHasAThread_s;
// otherwise 0 (a spinning thread would take a core from another; one processor hands off
// nothing). The CUDA executor parks at once. A CPU profile times its handoff with the spin of the
// runs its table is for (profile_cpu).
double automatic_handoff_spin_s(std::int32_t processors);
// `asked` (TrainingOptions::handoff_spin_s) for a CPU run of `processors` processors. The automatic
// spin is 0 where other threads need the cores too: across ranks (they may share the machine's
// CPUs), or where a link has a thread of its own (--transfer-threads links), which a spinning
// processor would keep waiting.
double handoff_spin_for(std::int32_t processors, double asked, bool other_threads_need_cores);

struct TrainingOptions {
  double learning_rate = 0.05;
  double momentum = 0.0;              // SGD momentum; 0 = plain SGD
  std::uint64_t seed = 1;             // initial weights
  bool record_memory_timeline = false;
  bool record_layer_times = false;    // time every layer's part of every task (for calibration)
  // How long a processor's or in-order link's thread spins, checking its next task's inputs, before
  // it parks on its condition variable. A parked thread's wake-up costs tens of microseconds (more
  // where an idle virtual CPU halts, and its next task may then run slower); a spinning one starts
  // at once, but holds its core meanwhile. kAutomaticHandoffSpin: automatic_handoff_spin_s.
  double handoff_spin_s = kAutomaticHandoffSpin;
  // Pinning (empty: none): processor p's thread runs on CPU pin_cpus[p mod size], and a link's
  // threads on its sending processor's CPU (a link from host memory: its processor's), where
  // the cost model puts their copies (copies_on_cores). Across ranks, a rank's listener is not
  // pinned.
  std::vector<int> pin_cpus;
  // A profile's copies at once (profile_layers' `concurrent`): this run is copy `copy` of
  // `copies`. The CUDA executor gives each copy SM partitions of its own, as a pipeline's
  // processors have.
  int copy = 0;
  int copies = 1;
  // Which threads copy the transfers between processors (cpu; the CUDA executor runs every link
  // on streams of its own). links: a thread per in-order link. senders: the sending processor's
  // thread copies each transfer right after the task whose data it copies, where the graph allows
  // it (links_copied_by_senders in copies_on_cores.hpp; other links keep their threads). automatic:
  // senders where the graph has a processor for every CPU this process may run on (the link
  // threads would only take turns with the compute threads, and each transfer would cost a
  // wake-up more), which is what the cost model charges there (charge_copies_to_cores); links
  // otherwise. Across ranks every link keeps its threads.
  TransferThreads transfer_threads = TransferThreads::automatic;
  // Called from worker threads after each minibatch's loss is complete (minibatches done so far).
  std::function<void(std::int32_t)> on_minibatch;
  // Told every task's start and end and every allocation and free, as they happen.
  std::vector<EngineObserver*> observers;
  // Across processes (ranks.hpp): this process runs its rank's processors only, and rank 0's
  // TrainingRun holds the whole run's result, losses and weights (the other ranks' hold none).
  // Null: one process runs every processor.
  const Distribution* distribution = nullptr;
};

// One layer's part of one task: F, BA or BW work of that layer, or its share of an update. A
// forward at the network's input also records its load of the microbatch's samples (and labels,
// where it is the output's too), as layer kInputLoadLayer: the table's input_load_s.
constexpr std::int32_t kInputLoadLayer = -1;
// A backward that assembles the gradient at its output from a split BA's slices
// (schedule/gradient_assembly.hpp) records the assembly as layer kGradientAssemblyLayer, with its
// own kind: the table's LayerTimes::assembly_s of its last layer.
constexpr std::int32_t kGradientAssemblyLayer = -2;
struct LayerTime {
  std::int32_t task = 0;
  std::int32_t layer = 0;
  TaskKind kind = TaskKind::F;
  double seconds = 0;
  double to_linear_s = 0;  // of a BA, BW or B's seconds: its way back to the linear output
};

struct TrainingRun {
  Result result;                          // measured: task times, utilization, memory, links
  std::vector<double> minibatch_loss;     // mean loss over each minibatch's samples
  std::vector<HostWeights> final_weights;    // per layer: the newest version
  std::vector<HostWeights> initial_weights;  // per layer: version 0
  std::vector<LayerTime> layer_times;     // when recorded
  // Per task, its times in an unmarked twin of this run (with_unmarked_twins, profiling.hpp): the
  // same graph run again without its layers' marks. Empty: no twin was made.
  std::vector<TaskTiming> unmarked_tasks;
  // When layer times are recorded (in one process): per task, the seconds its thread spent after
  // the task's end reading them, before it could start its next task; a run that does not record
  // them does not spend these (the profile's gaps between tasks leave them out).
  std::vector<double> layer_reading_s;
  bool copies_on_senders = false;         // some transfers were copied by their senders' threads
  // The CUDA executor's memory pool: per GPU, the most bytes it held from cudaMalloc at once (its
  // caches and the convolution workspaces included, which result.peak_memory_bytes, the graph's
  // buffers per processor, does not count). Empty on the CPU.
  std::map<int, std::int64_t> device_pool_peak_bytes;
  // The CPU executor's tensor pools (exec/cpu/tensor_pool.hpp), its processors' together: tensors
  // made in a buffer a dead tensor gave back, and tensors that allocated one. 0 on other executors.
  std::int64_t host_tensors_reused = 0, host_tensors_allocated = 0;
};

// Initial parameters of every layer, from `seed` (the same as every executor's version 0).
std::vector<HostWeights> initial_weights(const Network& network, std::uint64_t seed);

// Throws pipetwin::Error when `graph`, `network` and `data` do not go together (another model,
// another microbatch size, samples or classes that do not fit) or when a layer is one the
// executors cannot run. Every executor checks this first.
void check_run_inputs(const TaskGraph& graph, const Network& network, const BatchSampler& data);

// The sampler `graph` trains from: its data-parallel replicas' batches together (dp=d: d x batch
// samples a minibatch, replica r on microbatches [r M, (r + 1) M)), so that d replicas train on
// what one large-batch run would.
BatchSampler graph_sampler(const Dataset& data, const TaskGraph& graph, const Network& network, std::uint64_t seed);
// The executors train in fp32 with SGD (momentum from TrainingOptions) and keep their own
// activations: Adam, mixed precision's master weights and activation_memory=pytorch are for
// predictions only; throws saying so.
void check_executor_network(const Network& network);
// A learning rate that is a positive finite number, momentum in [0, 1) (NaN is neither).
void check_training_options(const TrainingOptions& options);
// "auto", "links" or "senders" as TrainingOptions::transfer_threads; anything else is an error
// naming the choices.
TransferThreads parse_transfer_threads(const std::string& name);

// An executor as profiling, validation and ExecutorEngine take it: run_cpu, or the CUDA executor
// bound to its placement.
using Runner = std::function<TrainingRun(const TaskGraph&, const Network&, const BatchSampler&, const TrainingOptions&)>;

}  // namespace pipetwin
