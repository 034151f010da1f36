// The executors' shared core (docs/design.md): runs a task graph with real training numerics, one
// host thread per processor and per in-order link, each running its resource's tasks in the
// schedule's order once their dependencies have ended; a shared link's transfers run on a few
// threads each, as soon as their dependencies have ended. Data moves between tasks as payloads,
// along the graph's typed dependencies: a task's output lives until the last task that reads it
// (reads_output) has run; a transfer copies what its dependency carries to the other end. Forward
// stashes, weight versions and gradient sums live in registries; the tracker accounts every
// buffer, by name (docs/design.md, "Memory"), to the processor or host memory that holds it.
//
// What runs the layers and holds the tensors is the Backend (the CPU backend in
// exec/cpu/cpu_executor.cpp, the CUDA one in exec/cuda/cuda_executor.cpp). It provides:
//   types   Params (one layer's flat parameters), Tensor, Activation, Gradient, LayerStash,
//           Labels, Lane (where one thread's work runs: nothing on the CPU, a stream on a GPU)
//   lanes   Lane& processor_lane(p), Lane& link_lane(k); enter(lane) at the start of its thread;
//           finish(lane) waits until the work issued on it has ended (after every task)
//   timing  LayerMark, mark_layer(lane) -> LayerMark (a point in the lane's work: a clock reading
//           on the CPU, an event recorded in the stream on a GPU), seconds_between(lane, a, b)
//           once the lane's work has ended, forget_layer_marks(lane) once a task's are read
//   data    load(lane, minibatch, microbatch, Activation* samples, Labels* labels): either may be
//           null when the task does not need it
//           samples_of(const Activation&) -> columns
//   layers  forward(lane, l, params, Activation in (by value: its buffer becomes the stash's input),
//           stash, labels*, loss_scale, double* loss) -> Activation; a backend with
//           `static constexpr bool lends_block_inputs = true` takes one more argument, a
//           ShortcutHandoff (layer_composition.hpp), and a block input goes from the layer that
//           takes it to the next layer of the task, which adds it, as one buffer.
//           the backward in the layer composition's three steps (layer_composition.hpp), so that a
//           fused B goes back through pooling, ReLU and batch norm once:
//           to_linear(lane, l, params, stash, out_grad*, want_shortcut, grad*) -> Linear,
//           input_gradient(lane, l, params, linear, out_grad*, begin, end) -> Gradient,
//           gradient_buffer(lane, l) -> Params, weight_gradient(lane, l, stash, linear, grad&);
//           these write grad; a backend with `static constexpr bool adds_into_gradients = true`
//           takes one more argument, `add`, in to_linear and weight_gradient: add into grad (a sum
//           begun by an earlier backward), or write it (gradient_buffer's room, uninitialised)
//           assemble(lane, slices, n) -> Gradient (the slices placed at their columns)
//           accumulate(lane, sum, g); sgd(lane, w, std::move(sum), velocity*, lr, momentum) -> Params
//           (the update gives its sum up: a backend may write the new weights over it)
//   memory  upload(const HostWeights&, p) / zeros(count, p) -> Params; download(Params) -> HostWeights;
//           copy(lane, x, to) for every type above, for stashes and for a stash's fields (to: a
//           processor or kHost; a processor's lane may share what it holds already, a link's
//           lane copies); clone(lane, params) -> a copy of its own on the lane's processor;
//           bytes(x) for every type above;
//           move_bytes(lane, bytes, to): an all-reduce step's bytes across the lane's link
//   ranks   pack(ByteWriter&, const T&) and unpack(ByteReader&, T&, to) for Tensor, Params and
//           LayerStash: a transfer's data, or a stash, in a message to another rank, placed on
//           processor `to` of the receiving rank (only runs across processes use them; ranks.hpp).
//           A transfer's writer may take its tensors out of band (ByteWriter::out_of_band: GPU
//           memory that the transport's NCCL moves), the reader filling them in the same order
//
// Across processes (TrainingOptions::distribution, ranks.hpp), each rank runs the threads of its
// own processors and of the links that leave them; a transfer to another rank's processor sends
// its data, which that rank's listener thread keeps as the transfer's output; every other task
// that a task of another rank waits for is announced by an empty message. Where a graph reads a
// registry across processors without a transfer (LayerPipe's BA parts read their forward's stash
// on a neighbouring processor), the forward's announcement carries the stash, and the reading
// rank keeps a copy; weight versions that arrive by transfer are kept in the reading rank's
// registry. Each rank frees its registries' entries after their last reader on that rank. Rank 0
// merges every rank's events, losses and final weights into the run's TrainingRun.
//
// This file declares the class and defines its scheduling (the threads, waiting, run());
// graph_execution_tasks.hpp defines a task's work and graph_execution_ranks.hpp what runs
// across processes, both included below the class.
#pragma once
#include <array>
#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "byte_codec.hpp"
#include "collective_shipments.hpp"
#include "rank_event_log.hpp"
#include "spin_wait.hpp"
#include "graph_flow.hpp"
#include "thread_plan.hpp"
#include "layer_time_log.hpp"
#include "memory_tracker.hpp"
#include "pipetwin/exec/layers/layer_composition.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/exec/training.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/buffers.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/summary_observer.hpp"

namespace pipetwin::exec {

// The cache line of x86-64 and of most Arm cores (std::hardware_destructive_interference_size,
// which GCC 12 warns against using in headers).
inline constexpr std::size_t kCacheLineBytes = 64;

// Whether a backend can put its tensors into messages between ranks (pack / unpack).
template <typename B, typename = void>
struct PacksTensors : std::false_type {};
template <typename B>
struct PacksTensors<B, std::void_t<decltype(std::declval<const B&>().pack(std::declval<ByteWriter&>(),
                                                                         std::declval<const typename B::Tensor&>()))>>
    : std::true_type {};

// Whether a backend's weight_gradient and to_linear can add into `grad` (their `add` argument),
// so that a backward can add its weight gradients straight into its update's sum.
template <typename B, typename = void>
struct AddsIntoGradients : std::false_type {};
template <typename B>
struct AddsIntoGradients<B, std::enable_if_t<B::adds_into_gradients>> : std::true_type {};

// Whether a task may take over what a transfer brought to its processor (the transfer's copy,
// which only it reads) instead of copying it again: a backend whose buffers are plain memory
// that any thread may free once the transfer has ended (the CPU's; the CUDA backend's copy of a
// tensor already where it is asked for shares it, copying nothing).
template <typename B, typename = void>
struct TakesOverArrivals : std::false_type {};
template <typename B>
struct TakesOverArrivals<B, std::enable_if_t<B::takes_over_arrivals>> : std::true_type {};

// Whether a backend's forward takes a ShortcutHandoff (layer_composition.hpp), so that a block's
// input goes from the layer that takes it to the next layer, which adds it, as one buffer where
// both run in one task: a backend whose tensors are values (the CPU's; the CUDA backend's are
// handles, whose copy shares).
template <typename B, typename = void>
struct LendsBlockInputs : std::false_type {};
template <typename B>
struct LendsBlockInputs<B, std::enable_if_t<B::lends_block_inputs>> : std::true_type {};

template <typename Backend>
class GraphExecution {
 public:
  using Params = typename Backend::Params;
  using Tensor = typename Backend::Tensor;
  using Activation = typename Backend::Activation;
  using Gradient = typename Backend::Gradient;
  using LayerStash = typename Backend::LayerStash;
  using Labels = typename Backend::Labels;
  using Lane = typename Backend::Lane;
  using ParamsPtr = std::shared_ptr<const Params>;
  using Clock = std::chrono::steady_clock;

  // `name` is the engine named in the Result ("cpu", "cuda").
  GraphExecution(Backend& backend, const TaskGraph& graph, const Network& network, const TrainingOptions& options,
                 std::string name)
      : b_(backend), g_(graph), net_(network), options_(options), name_(std::move(name)),
        flow_(read_graph_flow(graph, static_cast<std::int32_t>(network.size()))),
        start_(Clock::now()), event_log_(make_event_log(graph, options)), summary_(graph),
        observers_(hub_observers(options), graph.clock_hz, graph.tasks.size()),
        memory_(graph, observers_) {}

  TrainingRun run();

 private:
  // What a task hands to its dependents.
  struct Payload {
    Activation activation;                  // F: the output of its last layer
    Gradient input_gradient;                // B / BA: at the input of its first layer (its slice)
    std::vector<Gradient> output_gradients; // BA: per layer, the gradient at its output, for the BW
    std::vector<ParamsPtr> weights;         // X of weights: the version it copied, per layer
    std::vector<Params> weight_gradients;   // B / BW whose update runs elsewhere: per layer
    std::vector<LayerStash> stash;          // X of a forward's stash to a backward elsewhere: per
                                            // layer, all of it, or all but the input for a BA part
    std::int64_t accounted_bytes = 0;
    std::int32_t accounted_on = 0;
    std::int32_t owner = 0;                 // the task that made it
  };

  struct Stash {
    std::vector<LayerStash> layers;  // per layer of the forward
    std::int32_t owner = 0;          // the forward or recomputation that made it
    std::int32_t location = 0;       // processor or kHost
    std::int64_t bytes = 0;
    std::int32_t readers_left = 0;
  };

  struct KeptInput {  // a recomputed forward's input, until its recomputation
    Activation activation;
    std::int32_t owner = 0;  // the forward
    std::int32_t location = 0;
    std::int64_t bytes = 0;
  };

  const Task& task(std::int32_t id) const { return g_.tasks[static_cast<std::size_t>(id)]; }
  // The sampler's microbatch a task trains on: replica r takes microbatches [r M, (r + 1) M) of
  // the minibatch (the sampler deals replicas x M of them).
  std::int32_t sampled_microbatch(const Task& t) const { return flow_.replica(t) * g_.microbatches + t.microbatch; }
  const LinkInfo& link_of(const Task& t) const { return g_.links[static_cast<std::size_t>(t.resource)]; }

  std::int64_t payload_bytes(const Payload& p) const {
    std::int64_t total = b_.bytes(p.activation) + b_.bytes(p.input_gradient);
    for (const auto& s : p.stash) total += b_.bytes(s);
    for (const auto& g : p.output_gradients) total += b_.bytes(g);
    for (const auto& w : p.weights) total += b_.bytes(*w);
    for (const auto& g : p.weight_gradients) total += b_.bytes(g);
    return total;
  }
  // A layer's stash copied to `to`: all of it, or all but the forward's input (what a BA reads).
  LayerStash copy_stash(Lane& lane, const LayerStash& s, std::int32_t to, bool without_input) const {
    if (!without_input) return b_.copy(lane, s, to);
    LayerStash part;
    part.activation = b_.copy(lane, s.activation, to);
    part.batch_norm.normalized = b_.copy(lane, s.batch_norm.normalized, to);
    part.batch_norm.inv_std = b_.copy(lane, s.batch_norm.inv_std, to);
    part.argmax = b_.copy(lane, s.argmax, to);
    part.loss_gradient = b_.copy(lane, s.loss_gradient, to);
    return part;
  }
  std::int64_t stash_bytes(const std::vector<LayerStash>& layers) const {
    std::int64_t total = 0;
    for (const auto& s : layers) total += b_.bytes(s);
    return total;
  }

  void worker(const std::vector<std::int32_t>& order, Lane& lane);
  void shared_link_worker(const std::vector<std::int32_t>& tasks, Lane& lane);
  bool ready(const Task& t) const;  // under mutex_, or while spinning
  void spin_until_ready(const Task& t) const;
  std::int32_t resource_of(const Task& t) const;  // its condition variable in wake_
  void run_task(std::int32_t id, Lane& lane);  // runs, times and marks done one task
  void execute(const Task& t, Lane& lane);
  void forward(const Task& t, Lane& lane, Payload& out);
  void recompute(const Task& t, Lane& lane);
  std::shared_ptr<Stash> run_forward_layers(const Task& t, Lane& lane, Activation& in, Labels& labels, double* loss);
  void keep_stash(const Task& t, std::shared_ptr<Stash> kept);
  void backward(const Task& t, Lane& lane, Payload& out);
  void update(const Task& t, Lane& lane);
  void move(const Task& t, Lane& lane, Payload& out);
  void finished(const Task& t);
  void fail(std::exception_ptr error);
  // `waiting` stands for what the thread waits for (in the message timeout); `others`, the other
  // tasks it may take instead (a shared link's), which also want the listener.
  template <typename Ready>
  void await(std::unique_lock<std::mutex>& lock, std::condition_variable& wake, const Task& waiting, Ready ready,
             const std::vector<std::int32_t>* others = nullptr);
  bool waits_for_other_rank(const Task& t) const;

  // Across processes (ranks.hpp).
  bool distributed() const { return options_.distribution != nullptr; }
  std::int32_t rank_of_task(const Task& t) const;
  bool is_local(const Task& t) const { return task_rank_[static_cast<std::size_t>(t.id)] == rank_; }
  bool sends_away(const Task& t) const;  // a transfer to another rank's processor (its data goes along)
  std::int32_t receiving_rank(const Task& t) const;  // a transfer's: the rank of its receiving processor
  void plan_ranks();
  bool reads_stash(const Task& t, StashKey* key) const;  // from the registry (key: which)
  void keep_transferred_stash(const Task& x);             // under no lock; after keep(x, ...)
  template <typename Hear>
  void plan_stashes(Hear& hear);
  template <typename Hear>
  void plan_versions(Hear& hear);
  void plan_registry_readers();
  template <typename Hear>
  void plan_collectives(Hear& hear);
  void pack_carried_sums(const Task& step);
  void plan_sums_in_place();  // sums_in_place_, after threads_
  void drop_arrived_sum(std::int32_t update);  // under registry_mutex_
  void announce(const Task& t);  // tells the other ranks waiting for `t` that it has ended
  void listen();                 // this rank's messages: transfers' data and other ranks' ends
  void want_listener(int change);  // +1 / -1: a thread starts / stops needing the listener
  // Pins the calling thread to processor `processor`'s CPU where TrainingOptions::pin_cpus asks;
  // false (the run failed, with the reason) when it cannot.
  bool pin_to(std::int32_t processor);
  void send_to_rank(std::int32_t rank, std::int32_t task, std::vector<unsigned char> bytes);
  void mark_done(std::int32_t id);
  void pack_payload(ByteWriter& w, const Payload& p) const;
  // A transfer's output from its message, its tensors placed on processor `to`.
  std::unique_ptr<Payload> unpack_payload(const RankMessage& message, std::int32_t to) const;
  std::int64_t now_ns() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }
  void gather_run(TrainingRun& run);
  const Task& origin(const Task& t) const;  // a transfer's first source that is not a transfer
  void keep_arrived(const Task& t, const RankMessage& message);
  void drop_stash_reader(const StashKey& key, const Task& t);
  void drop_version_reader(const Task& reader, std::int32_t stage, std::int32_t version, const Task& t);

  ParamsPtr weights(std::int32_t layer, std::int32_t version, const Task& reader);
  void store_weights(std::int32_t layer_key, std::int32_t version, ParamsPtr value);  // flow_.layer_key
  std::int64_t stage_weight_bytes(std::int32_t stage, std::int32_t version);
  std::shared_ptr<Stash> stash(const Task& t);
  const Payload& payload(std::int32_t id) const { return *payloads_[static_cast<std::size_t>(id)]; }
  Activation input_activation(const Task& t, Lane& lane);
  bool takes_over(const Task& t, std::int32_t source, Carries carries) const;
  Gradient output_gradient(const Task& t, Lane& lane, bool* found);
  // The same, for a task of an assembly group (GraphFlow::assembly_group): assembled by the group's
  // first task to run, read by the others.
  std::shared_ptr<const Gradient> shared_output_gradient(const Task& t, Lane& lane);
  void keep(const Task& t, std::unique_ptr<Payload> out, std::int32_t where);
  // Layer times (TrainingOptions::record_layer_times): each layer's work lies between two marks
  // in its lane's work; a task's layers are read once its work has ended (read_layer_times),
  // so timing a layer adds no wait between layers (on a GPU, the kernels run back to back). What
  // is read stays in the task's own slot until the threads have joined, and only then goes to the
  // observers (report_layer_times): told as they were read, the reports took the observers' lock
  // between tasks, where a co-running thread then waited for it inside the tasks it was timing.
  using LayerMark = typename Backend::LayerMark;
  struct LayerSpan {
    LayerMark from{}, to{};
  };
  // At most three spans (a fused B's way back to the linear output, its weight part and its
  // input part), held in place: recording a layer allocates nothing.
  struct LayerSpans {
    std::array<LayerSpan, 3> at{};
    std::size_t count = 0;
    LayerSpans(std::initializer_list<LayerSpan> spans) {
      for (const LayerSpan& span : spans) push_back(span);
    }
    void push_back(const LayerSpan& span) { at.at(count++) = span; }
    const LayerSpan* begin() const { return at.data(); }
    const LayerSpan* end() const { return at.data() + count; }
    std::size_t size() const { return count; }
    const LayerSpan& front() const { return at.front(); }
  };
  struct LayerTiming {
    std::int32_t layer = 0;
    TaskKind kind = TaskKind::F;
    LayerSpans spans;  // its seconds: their sum
  };
  LayerMark layer_begin(Lane& lane);
  LayerSpan layer_span(Lane& lane, const LayerMark& begin);  // from begin to now in the lane's work
  void record_layer(const Task& t, Lane& lane, std::int32_t layer, TaskKind kind, const LayerMark& begin);
  void record_layer_spans(const Task& t, std::int32_t layer, TaskKind kind, const LayerSpans& spans);
  void read_layer_times(const Task& t, Lane& lane);  // after the task's work has ended
  void report_layer_times();                          // after the run's threads have joined
  std::vector<std::vector<LayerTiming>> layer_timings_;  // per task, until it is read
  std::vector<std::vector<LayerTime>> layer_times_;      // per task, read, until reported
  std::vector<double> layer_reading_s_;  // per task: its thread's seconds reading them (TrainingRun::layer_reading_s)

  Backend& b_;
  const TaskGraph& g_;
  const Network& net_;
  const TrainingOptions& options_;
  std::string name_;
  GraphFlow flow_;
  Clock::time_point start_;
  static std::unique_ptr<RankEventLog> make_event_log(const TaskGraph& graph, const TrainingOptions& options) {
    if (options.distribution == nullptr) return nullptr;
    const RankTransport& transport = *options.distribution->transport;
    std::vector<bool> local;
    const auto processors = static_cast<std::int32_t>(graph.processors.size());
    for (std::int32_t p = 0; p < processors; ++p) local.push_back(rank_of_processor(p, processors, transport.ranks()) == transport.rank());
    return std::make_unique<RankEventLog>(std::move(local));
  }
  std::unique_ptr<RankEventLog> event_log_;  // across processes: this rank's events, for rank 0
  // The run's own observers first (its Result and layer times come from them), then the caller's.
  std::vector<EngineObserver*> hub_observers(const TrainingOptions& options) {
    std::vector<EngineObserver*> all{&summary_};
    if (event_log_) all.push_back(event_log_.get());
    if (options.record_layer_times) all.push_back(&layer_log_);
    all.insert(all.end(), options.observers.begin(), options.observers.end());
    return all;
  }
  SummaryObserver summary_;
  LayerTimeLog layer_log_;
  ObserverHub observers_;
  MemoryTracker memory_;
  std::vector<std::int32_t> stage_of_layer_;

  // Scheduling state, under `mutex_`.
  // Each processor and each link has its own condition variable: a task's end wakes only the
  // threads whose tasks depend on it (`wakes_`: per task, the resources of its dependents), not
  // every thread of the run.
  // What a spinning thread reads (done_, failed_) sits on cache lines of its own, apart from the
  // mutexes the working threads take (kCacheLineBytes): a spinner's reads of a line another
  // thread writes make each of those writes miss.
  alignas(kCacheLineBytes) std::mutex mutex_;
  std::unique_ptr<std::condition_variable[]> wake_;  // processors, then links
  std::vector<std::vector<std::int32_t>> wakes_;
  ThreadPlan threads_;  // which thread runs each task
  alignas(kCacheLineBytes) std::unique_ptr<std::atomic<bool>[]> done_;  // set under `mutex_`; read
                                                                        // without it while spinning
  std::vector<char> claimed_;  // a shared link's task some thread has taken
  std::vector<std::int32_t> dependents_left_;
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;

  // Payloads: written by their task before it is marked done, read by dependents after.
  std::vector<std::unique_ptr<Payload>> payloads_;

  // Registries, under `registry_mutex_`.
  alignas(kCacheLineBytes) std::mutex registry_mutex_;
  std::map<std::pair<std::int32_t, std::int32_t>, ParamsPtr> versions_;  // (layer, version)
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> readers_left_;
  std::map<StashKey, std::shared_ptr<Stash>> stashes_;
  std::map<StashKey, std::shared_ptr<KeptInput>> inputs_;
  std::map<std::int32_t, std::vector<Params>> accumulators_;  // per update task
  // Per assembly group: the gradient its first task assembled, and its tasks yet to take it.
  std::map<std::int32_t, std::pair<std::shared_ptr<const Gradient>, std::int32_t>> assembled_;
  // Per update task: its backwards add their weight gradients straight into its sum (the backend
  // adds into gradients, and they all run on one thread, one after another).
  std::vector<bool> sums_in_place_;
  std::vector<Params> momentum_;                               // per layer key (touched by its U only)
  std::map<std::int32_t, std::pair<std::vector<Params>, std::int32_t>> reduced_;  // per all-reduce: the
                                                                 // sum and the updates yet to take it
  std::vector<double> loss_sum_;
  std::vector<std::int32_t> loss_parts_;

  // Across processes: set up by plan_ranks() before any thread starts.
  std::int32_t rank_ = 0;
  std::vector<std::int32_t> task_rank_;            // per task: the rank that runs it
  std::vector<std::vector<std::int32_t>> notify_;  // per task of this rank: other ranks to tell it ended
  std::int64_t messages_expected_ = 0;             // messages this rank will receive
  std::unique_ptr<std::atomic<std::int64_t>[]> heard_from_ns_;  // per rank: when its last message came
  // The listener polls only while it is wanted (so that it takes no core from a computing thread):
  // while a task of this rank waits for another rank's, while a thread of this rank sends (a
  // large message completes only as its receiver polls: two ranks sending to each other must
  // both listen), and once every worker has ended, for what is left. Under `listen_mutex_`.
  std::mutex listen_mutex_;
  std::condition_variable listen_wake_;
  std::int32_t listen_wanted_ = 0;
  bool workers_done_ = false;
  std::map<StashKey, std::int32_t> stash_readers_here_;  // this rank's readers (flow_.stash_readers'
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> version_readers_here_;  // and version_readers')
  std::map<StashKey, std::int32_t> stash_home_here_;       // a shipped stash: the processor it is kept on
  std::set<StashKey> stash_by_transfer_here_;              // stashes that transfers bring to every reader here
  std::vector<bool> last_stash_hop_;                       // per task: a transfer a backward takes its stash from
  std::vector<bool> reads_registry_;                       // per task: a transfer that reads a registry
  std::vector<std::vector<std::int32_t>> ship_to_;         // per stash maker or update: ranks that read
                                                           // its stash or its version without a transfer
  std::vector<std::vector<unsigned char>> shipped_;        // per such task: that packed, until announced
  std::map<std::int32_t, std::vector<std::int32_t>> step_carries_;  // all-reduce step -> the updates whose
                                                                  // gradient sums it carries to another rank
  std::map<std::int32_t, std::int32_t> arrived_sum_uses_;  // another rank's update -> what is yet to happen
                                                           // to its sum here: arrivals (a hierarchical
                                                           // all-reduce may bring it twice), steps carrying
                                                           // it on, this rank's sum of the replicas
};

}  // namespace pipetwin::exec

// The member definitions: a task's work, and what runs across processes.
#include "graph_execution_tasks.hpp"
#include "graph_execution_ranks.hpp"

namespace pipetwin::exec {

// Scheduling: the threads that run each resource's tasks once their dependencies have ended.
template <typename B>
void GraphExecution<B>::execute(const Task& t, Lane& lane) {
  auto out = std::make_unique<Payload>();
  switch (t.kind) {
    case TaskKind::F:
      forward(t, lane, *out);
      break;
    case TaskKind::B:
    case TaskKind::BA:
    case TaskKind::BW:
      backward(t, lane, *out);
      break;
    case TaskKind::U:  // its version is in the registry: no output
      update(t, lane);
      return;
    case TaskKind::RC:
      recompute(t, lane);
      return;
    case TaskKind::X:
    case TaskKind::OFF:
    case TaskKind::ON:
      move(t, lane, *out);
      b_.finish(lane);
      if (t.collective >= 0) {  // an all-reduce's step hands on nothing (across ranks: the sums it carries)
        if (distributed()) pack_carried_sums(t);
        return;
      }
      if (sends_away(t)) {            // the receiving rank keeps it (listen)
        // Where the transport moves GPU memory itself (NCCL), the tensors go beside the bytes.
        RankTransport& transport = *options_.distribution->transport;
        ByteWriter message(transport.carries_spans());
        pack_payload(message, *out);
        transport.post_with_spans(receiving_rank(t), t.id, std::move(message.bytes()), message.spans());
        return;
      }
      keep(t, std::move(out), link_of(t).dst);
      keep_transferred_stash(t);
      return;
    default:
      throw Error("the " + name_ + " executor cannot run " + describe_task(g_, t));
  }
  b_.finish(lane);
  keep(t, std::move(out), t.resource);
}

// Frees what the task was the last reader of: its dependencies' payloads, its stash, the weight
// versions it read.
template <typename B>
void GraphExecution<B>::finished(const Task& t) {
  std::vector<std::unique_ptr<Payload>> released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& d : t.deps) {
      const auto source = static_cast<std::size_t>(d.task);
      if (reads_output(task(d.task), t, d) && --dependents_left_[source] == 0) released.push_back(std::move(payloads_[source]));
    }
    if (dependents_left_[static_cast<std::size_t>(t.id)] == 0) released.push_back(std::move(payloads_[static_cast<std::size_t>(t.id)]));
  }
  for (const auto& p : released) {
    if (p) memory_.release({BufferKind::output, p->owner, -1}, p->accounted_on, p->accounted_bytes, t.id);
  }
  if (is_link_task(t)) {
    if (distributed() && reads_registry_[static_cast<std::size_t>(t.id)]) {  // counted as a reader here
      const Task& source = task(data_dependency(t)->task);
      if (data_dependency(t)->carries == Carries::stash) {
        drop_stash_reader(flow_.stash_key(source), t);
      } else {
        drop_version_reader(source, source.stage, source.version_written, t);
      }
    }
    if (distributed() && (t.kind == TaskKind::OFF || t.kind == TaskKind::ON)) drop_stash_reader(flow_.stash_key(t), t);
    return;
  }
  if (is_backward(t.kind)) drop_stash_reader(flow_.stash_key(t), t);
  if (t.stage >= 0 && t.version_read >= 0) drop_version_reader(t, t.stage, t.version_read, t);
}

// `t` has read the stash `key`: the last reader frees it.
template <typename B>
void GraphExecution<B>::drop_stash_reader(const StashKey& key, const Task& t) {
  std::shared_ptr<Stash> gone;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    const auto it = stashes_.find(key);
    if (it != stashes_.end() && --it->second->readers_left == 0) {
      gone = it->second;
      stashes_.erase(it);
    }
  }
  if (gone) memory_.release({BufferKind::stash, gone->owner, -1}, gone->location, gone->bytes, t.id);
}

// `t` has read `version` of the layers of `stage` (as `reader`, a task of that stage, numbers
// them): the last reader frees it, unless it is the newest.
template <typename B>
void GraphExecution<B>::drop_version_reader(const Task& reader, std::int32_t stage_index, std::int32_t version, const Task& t) {
  const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(stage_index));
  std::int64_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
      const std::int32_t key = flow_.layer_key(reader, l);
      if (--readers_left_[{key, version}] == 0 && version != flow_.newest_version[static_cast<std::size_t>(l)]) {
        const auto it = versions_.find({key, version});
        if (it != versions_.end()) {
          freed += b_.bytes(*it->second);
          versions_.erase(it);
        }
      }
    }
  }
  const auto writer = flow_.version_writer.find({stage_index, version});
  const std::int32_t owner = writer == flow_.version_writer.end() ? -1 : writer->second;
  memory_.release({BufferKind::weights, owner, stage_index}, stage.processor, freed, t.id);
}

// The first error stops every thread; run() rethrows it.
template <typename B>
void GraphExecution<B>::fail(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_) error_ = std::move(error);
  failed_ = true;
  for (std::size_t r = 0; r < g_.processors.size() + g_.links.size(); ++r) wake_[r].notify_all();
  listen_wake_.notify_all();
}

// Processors are resources 0..P-1, links P.. (one condition variable each).
template <typename B>
std::int32_t GraphExecution<B>::resource_of(const Task& t) const {
  return threads_.runner[static_cast<std::size_t>(t.id)];
}

template <typename B>
bool GraphExecution<B>::ready(const Task& t) const {
  return std::all_of(t.deps.begin(), t.deps.end(), [&](const Dep& d) { return done_[static_cast<std::size_t>(d.task)].load(std::memory_order_acquire); });
}

template <typename B>
void GraphExecution<B>::run_task(std::int32_t id, Lane& lane) {
  const Task& t = task(id);
  observers_.started(id, Clock::now());
  execute(t, lane);
  finished(t);
  observers_.ended(id, Clock::now());
  read_layer_times(t, lane);
  if (distributed()) announce(t);  // first: what it ships reaches other ranks before any later transfer
  mark_done(id);
}

template <typename B>
void GraphExecution<B>::mark_done(std::int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_[static_cast<std::size_t>(id)].store(true, std::memory_order_release);
  for (const auto r : wakes_[static_cast<std::size_t>(id)]) wake_[r].notify_all();
}

// Waits on `wake` until `ready()`. Across processes, when `waiting` still lacks a task of another
// rank, and no message has come from that rank for the message timeout since this wait began,
// throws naming both tasks and the rank.
template <typename B>
template <typename Ready>
void GraphExecution<B>::await(std::unique_lock<std::mutex>& lock, std::condition_variable& wake, const Task& waiting, Ready ready,
                              const std::vector<std::int32_t>* others) {
  if (!distributed()) {
    wake.wait(lock, ready);
    return;
  }
  const double timeout_s = options_.distribution->message_timeout_s;
  const auto slice = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(0.1, timeout_s)));
  const std::int64_t began_ns = now_ns();
  bool remote = waits_for_other_rank(waiting);  // then the listener must listen
  if (others != nullptr) {
    for (const auto id : *others) remote = remote || (!claimed_[static_cast<std::size_t>(id)] && waits_for_other_rank(task(id)));
  }
  if (remote) {
    lock.unlock();
    want_listener(+1);
    lock.lock();
  }
  struct Unwant {  // however the wait ends
    GraphExecution* self;
    std::unique_lock<std::mutex>& lock;
    bool active;
    ~Unwant() {
      if (!active) return;
      const bool held = lock.owns_lock();
      if (held) lock.unlock();
      self->want_listener(-1);
      if (held) lock.lock();
    }
  } unwant{this, lock, remote};
  while (!wake.wait_for(lock, slice, ready)) {
    for (const auto& d : waiting.deps) {
      const Task& missing = task(d.task);
      if (is_local(missing) || done_[static_cast<std::size_t>(d.task)].load()) continue;
      const std::int32_t other = rank_of_task(missing);
      const std::int64_t since_ns = std::max(began_ns, heard_from_ns_[static_cast<std::size_t>(other)].load());
      const double quiet_s = static_cast<double>(now_ns() - since_ns) * 1e-9;
      if (quiet_s < timeout_s) continue;
      throw Error(describe_task(g_, waiting) + " waited " + short_number(quiet_s) + " s for " + describe_task(g_, missing) +
                  " of rank " + std::to_string(other) + ", and no message came from that rank: it, or a rank it waits for, has stopped or "
                  "hangs (--message-timeout sets the wait)");
    }
  }
}

template <typename B>
bool GraphExecution<B>::waits_for_other_rank(const Task& t) const {
  return std::any_of(t.deps.begin(), t.deps.end(), [&](const Dep& d) {
    return !is_local(task(d.task)) && !done_[static_cast<std::size_t>(d.task)].load();
  });
}

// Spins (up to options_.handoff_spin_s) until `t`'s inputs are done or the run failed.
template <typename B>
void GraphExecution<B>::spin_until_ready(const Task& t) const {
  if (options_.handoff_spin_s <= 0) return;
  spin_until([&] { return failed_.load(std::memory_order_relaxed) || ready(t); }, options_.handoff_spin_s);
}

// A processor or an in-order link: its tasks one at a time, in order.
template <typename B>
void GraphExecution<B>::worker(const std::vector<std::int32_t>& order, Lane& lane) {
  try {
    b_.enter(lane);
    for (const auto id : order) {
      spin_until_ready(task(id));
      {
        std::unique_lock<std::mutex> lock(mutex_);
        await(lock, wake_[resource_of(task(id))], task(id), [&] { return failed_ || ready(task(id)); });
        if (failed_) return;
      }
      run_task(id, lane);
    }
  } catch (...) {
    fail(std::current_exception());
  }
}

// One of a shared link's threads: takes any of the link's tasks whose dependencies have ended,
// until every task is taken.
template <typename B>
void GraphExecution<B>::shared_link_worker(const std::vector<std::int32_t>& tasks, Lane& lane) {
  try {
    b_.enter(lane);
    for (;;) {
      std::int32_t id = -1;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        bool all_taken = false;
        // (while waiting, the link's first untaken task stands for all in the message timeout)
        const auto untaken = std::find_if(tasks.begin(), tasks.end(), [&](std::int32_t c) { return !claimed_[static_cast<std::size_t>(c)]; });
        await(lock, wake_[resource_of(task(tasks.front()))], task(untaken == tasks.end() ? tasks.front() : *untaken), [&] {
          if (failed_) return true;
          all_taken = true;
          for (const auto candidate : tasks) {
            if (claimed_[static_cast<std::size_t>(candidate)]) continue;
            all_taken = false;
            if (ready(task(candidate))) {
              id = candidate;
              return true;
            }
          }
          return all_taken;
        }, &tasks);
        if (failed_ || id < 0) return;
        claimed_[static_cast<std::size_t>(id)] = 1;
        // The link's other threads look again: another task may be ready, or none left to take.
        wake_[resource_of(task(id))].notify_all();
      }
      run_task(id, lane);
    }
  } catch (...) {
    fail(std::current_exception());
  }
}

template <typename B>
TrainingRun GraphExecution<B>::run() {
  // The schedule's own memory declaration must fit before anything runs.
  const Result declared = evaluate(g_);
  if (!declared.out_of_memory.empty()) {
    throw Error(describe_out_of_memory(g_, declared.out_of_memory.front()) +
                " (the schedule's declared memory; the " + name_ + " executor refuses to start)");
  }
  const auto n = g_.tasks.size();
  stage_of_layer_.assign(net_.size(), -1);  // replica 0's stages; replica r's are r S later
  for (std::int32_t s = 0; s < flow_.stages_per_replica; ++s) {
    for (std::int32_t l = g_.stages[static_cast<std::size_t>(s)].first_layer; l <= g_.stages[static_cast<std::size_t>(s)].last_layer; ++l) {
      stage_of_layer_[static_cast<std::size_t>(l)] = s;
    }
  }
  for (std::size_t l = 0; l < net_.size(); ++l) {
    if (stage_of_layer_[l] < 0) throw Error("graph: layer " + std::to_string(l) + " belongs to no stage");
  }
  if (distributed()) plan_ranks();
  done_ = std::make_unique<std::atomic<bool>[]>(n);
  for (std::size_t i = 0; i < n; ++i) done_[i].store(false, std::memory_order_relaxed);
  claimed_.assign(n, 0);
  wake_ = std::make_unique<std::condition_variable[]>(g_.processors.size() + g_.links.size());
  threads_ = plan_threads(g_, options_.transfer_threads == TransferThreads::senders && !distributed());
  plan_sums_in_place();
  wakes_.assign(n, {});
  for (const auto& t : g_.tasks) {
    for (const auto& d : t.deps) {
      auto& resources = wakes_[static_cast<std::size_t>(d.task)];
      if (std::find(resources.begin(), resources.end(), resource_of(t)) == resources.end()) resources.push_back(resource_of(t));
    }
  }
  payloads_.resize(n);
  if (options_.record_layer_times) {
    layer_timings_.resize(n);
    layer_times_.resize(n);
    layer_reading_s_.assign(n, 0.0);
  }
  dependents_left_.resize(n);
  for (std::size_t i = 0; i < n; ++i) dependents_left_[i] = flow_.output_readers[i];
  readers_left_ = distributed() ? version_readers_here_ : flow_.version_readers;
  loss_sum_.assign(static_cast<std::size_t>(g_.minibatches), 0.0);
  loss_parts_.assign(static_cast<std::size_t>(g_.minibatches), 0);
  TrainingRun run;
  run.initial_weights = initial_weights(net_, options_.seed);
  momentum_.resize(static_cast<std::size_t>(flow_.replicas) * net_.size());
  for (std::int32_t r = 0; r < flow_.replicas; ++r) {  // every replica starts from the same weights
    for (std::size_t l = 0; l < net_.size(); ++l) {
      const std::int32_t stage = r * flow_.stages_per_replica + stage_of_layer_[l];
      const std::int32_t home = g_.stages[static_cast<std::size_t>(stage)].processor;
      const auto key = static_cast<std::size_t>(r) * net_.size() + l;
      store_weights(static_cast<std::int32_t>(key), 0, std::make_shared<const Params>(b_.upload(run.initial_weights[l], home)));
      momentum_[key] = options_.momentum > 0 ? b_.zeros(run.initial_weights[l].size(), home) : Params();
      if (options_.momentum > 0) memory_.allocate({BufferKind::optimizer_state, -1, stage}, home, b_.bytes(momentum_[key]), -1);
    }
  }
  for (std::size_t s = 0; s < g_.stages.size(); ++s) {
    const auto stage = static_cast<std::int32_t>(s);
    memory_.allocate({BufferKind::weights, -1, stage}, g_.stages[s].processor, stage_weight_bytes(stage, 0), -1);
  }

  // Every rank's clock starts here. A rank that never comes (stopped, or hung before its run)
  // fails the others after the message timeout rather than holding them for good.
  if (distributed()) options_.distribution->transport->barrier_within(options_.distribution->message_timeout_s);
  start_ = Clock::now();
  if (distributed()) {
    const auto ranks = static_cast<std::size_t>(options_.distribution->transport->ranks());
    heard_from_ns_ = std::make_unique<std::atomic<std::int64_t>[]>(ranks);
    for (std::size_t r = 0; r < ranks; ++r) heard_from_ns_[r] = now_ns();
  }
  observers_.restart(start_);
  std::vector<std::thread> threads;
  const auto& by_processor = threads_.processor_orders;
  const auto by_link = tasks_by_link(g_);
  const auto runs_here = [&](const std::vector<std::int32_t>& tasks) { return !distributed() || is_local(task(tasks.front())); };
  std::thread listener;
  if (messages_expected_ > 0) listener = std::thread([this] { listen(); });
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    if (!by_processor[p].empty() && !runs_here(by_processor[p])) continue;
    Lane& lane = b_.processor_lane(static_cast<std::int32_t>(p));
    const std::int32_t pin = static_cast<std::int32_t>(p);
    threads.emplace_back([this, &by_processor, p, &lane, pin] {
      if (pin_to(pin)) worker(by_processor[p], lane);
    });
  }
  for (std::size_t k = 0; k < by_link.size(); ++k) {
    if (by_link[k].empty() || !threads_.link_has_thread[k] || !runs_here(by_link[k])) continue;
    Lane& lane = b_.link_lane(static_cast<std::int32_t>(k));
    const std::int32_t pin = g_.links[k].src != kHost ? g_.links[k].src : g_.links[k].dst;  // the sender's core
    if (g_.links[k].policy == LinkPolicy::in_order) {
      threads.emplace_back([this, &by_link, k, &lane, pin] {
        if (pin_to(pin)) worker(by_link[k], lane);
      });
      continue;
    }
    // A shared link: up to kSharedLinkThreads transfers at a time, on the link's one lane.
    constexpr std::size_t kSharedLinkThreads = 4;
    for (std::size_t w = 0; w < std::min(kSharedLinkThreads, by_link[k].size()); ++w) {
      threads.emplace_back([this, &by_link, k, &lane, pin] {
        if (pin_to(pin)) shared_link_worker(by_link[k], lane);
      });
    }
  }
  for (auto& thread : threads) thread.join();
  report_layer_times();
  if (listener.joinable()) {  // what is left for it to receive, it receives now
    {
      std::lock_guard<std::mutex> lock(listen_mutex_);
      workers_done_ = true;
    }
    listen_wake_.notify_all();
    listener.join();
  }
  if (error_) std::rethrow_exception(error_);
  if (!accumulators_.empty()) {  // every gradient sum, made here or arrived, was taken by its last use
    throw Error("internal: " + std::to_string(accumulators_.size()) + " gradient sums were left after the run, the first of " +
                describe_task(g_, task(accumulators_.begin()->first)));
  }
  if (distributed()) {
    options_.distribution->transport->flush(options_.distribution->message_timeout_s);  // this rank's last messages
    gather_run(run);
    return run;
  }

  run.result = summary_.result(name_, options_.record_memory_timeline);
  run.result.out_of_memory.clear();  // the tracker throws instead
  run.layer_times = layer_log_.take();
  run.layer_reading_s = std::move(layer_reading_s_);
  run.copies_on_senders = std::find(threads_.link_has_thread.begin(), threads_.link_has_thread.end(), false) != threads_.link_has_thread.end();
  for (std::size_t k = 0; k < loss_sum_.size(); ++k) {
    run.minibatch_loss.push_back(loss_sum_[k] / static_cast<double>(net_.batch * flow_.replicas));
  }
  for (std::size_t l = 0; l < net_.size(); ++l) {
    run.final_weights.push_back(b_.download(*weights(static_cast<std::int32_t>(l), flow_.newest_version[l], g_.tasks.front())));
  }
  return run;
}

}  // namespace pipetwin::exec
