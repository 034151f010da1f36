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

template <typename B>
void GraphExecution<B>::keep(const Task& t, std::unique_ptr<Payload> out, std::int32_t where) {
  out->accounted_on = where;
  out->accounted_bytes = payload_bytes(*out);
  out->owner = t.id;
  memory_.allocate({BufferKind::output, t.id, -1}, where, out->accounted_bytes, t.id);
  payloads_[static_cast<std::size_t>(t.id)] = std::move(out);
}

template <typename B>
typename GraphExecution<B>::LayerMark GraphExecution<B>::layer_begin(Lane& lane) {
  return options_.record_layer_times ? b_.mark_layer(lane) : LayerMark{};
}

template <typename B>
typename GraphExecution<B>::LayerSpan GraphExecution<B>::layer_span(Lane& lane, const LayerMark& begin) {
  return options_.record_layer_times ? LayerSpan{begin, b_.mark_layer(lane)} : LayerSpan{};
}

template <typename B>
void GraphExecution<B>::record_layer(const Task& t, Lane& lane, std::int32_t layer, TaskKind kind, const LayerMark& begin) {
  if (options_.record_layer_times) record_layer_spans(t, layer, kind, {layer_span(lane, begin)});
}

template <typename B>
void GraphExecution<B>::record_layer_spans(const Task& t, std::int32_t layer, TaskKind kind, const LayerSpans& spans) {
  if (!options_.record_layer_times) return;
  // Only the task's own thread touches its slot.
  auto& timings = layer_timings_[static_cast<std::size_t>(t.id)];
  if (timings.empty()) timings.reserve(static_cast<std::size_t>(t.last_layer - t.first_layer + 1) * 3);  // B: BW, BA, B
  timings.push_back({layer, kind, spans});
}

// Only the task's own thread touches its slots.
template <typename B>
void GraphExecution<B>::read_layer_times(const Task& t, Lane& lane) {
  if (!options_.record_layer_times) return;
  auto& timings = layer_timings_[static_cast<std::size_t>(t.id)];
  if (timings.empty()) return;
  const auto reading_from = Clock::now();  // after the task's end: time its run would not have spent
  b_.finish(lane);
  auto& read = layer_times_[static_cast<std::size_t>(t.id)];
  read.reserve(timings.size());
  for (const auto& timing : timings) {
    double seconds = 0;
    for (const auto& span : timing.spans) seconds += b_.seconds_between(lane, span.from, span.to);
    // A backward's spans begin with its way back to the linear output (backward, below).
    const bool backward = is_backward(timing.kind) && timing.spans.size() >= 2;
    const double to_linear_s =
        backward ? b_.seconds_between(lane, timing.spans.front().from, timing.spans.front().to) : 0.0;
    read.push_back({t.id, timing.layer, timing.kind, seconds, to_linear_s});
  }
  timings.clear();
  timings.shrink_to_fit();
  b_.forget_layer_marks(lane);
  layer_reading_s_[static_cast<std::size_t>(t.id)] = std::chrono::duration<double>(Clock::now() - reading_from).count();
}

// In task order, as the run's layer times (layer_log_) keep them.
template <typename B>
void GraphExecution<B>::report_layer_times() {
  for (auto& task_times : layer_times_) {
    for (const LayerTime& time : task_times) observers_.layer_timed(time.task, time.layer, time.kind, time.seconds, time.to_linear_s);
    task_times.clear();
  }
}

template <typename B>
typename GraphExecution<B>::ParamsPtr GraphExecution<B>::weights(std::int32_t layer, std::int32_t version, const Task& reader) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  const auto it = versions_.find({flow_.layer_key(reader, layer), version});
  if (it == versions_.end()) {
    throw Error("schedule error: " + describe_task(g_, reader) + " reads version " + std::to_string(version) +
                " of layer " + std::to_string(layer) + ", which no finished update wrote (a missing dependency)");
  }
  return it->second;
}

template <typename B>
void GraphExecution<B>::store_weights(std::int32_t layer_key, std::int32_t version, ParamsPtr value) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  versions_[{layer_key, version}] = std::move(value);
}

// The bytes of one stored version of every layer of a stage (accounted as one weights buffer).
template <typename B>
std::int64_t GraphExecution<B>::stage_weight_bytes(std::int32_t stage, std::int32_t version) {
  const StageInfo& s = g_.stages.at(static_cast<std::size_t>(stage));
  const std::int32_t replica_layers = stage / flow_.stages_per_replica * flow_.layers;
  std::int64_t bytes = 0;
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (std::int32_t l = s.first_layer; l <= s.last_layer; ++l) bytes += b_.bytes(*versions_.at({replica_layers + l, version}));
  return bytes;
}

template <typename B>
std::shared_ptr<typename GraphExecution<B>::Stash> GraphExecution<B>::stash(const Task& t) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  const auto it = stashes_.find(flow_.stash_key(t));
  if (it == stashes_.end()) throw Error("schedule error: " + describe_task(g_, t) + " runs before the forward it belongs to");
  return it->second;
}

// The layers of a forward or a recomputation, from `in` (on return: the last layer's output);
// the stash they keep, accounted on the task's processor and registered for its backward readers.
template <typename B>
std::shared_ptr<typename GraphExecution<B>::Stash> GraphExecution<B>::run_forward_layers(const Task& t, Lane& lane,
                                                                                        Activation& in, Labels& labels,
                                                                                        double* loss) {
  auto kept = std::make_shared<Stash>();
  kept->layers.resize(static_cast<std::size_t>(t.last_layer - t.first_layer + 1));
  const double loss_scale = static_cast<double>(net_.batch * flow_.replicas);
  bool lent = false;  // the layer before lent its input as the shortcut (ShortcutHandoff)
  for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
    const auto begin = layer_begin(lane);
    const ParamsPtr w = weights(l, t.version_read, t);
    LayerStash& stash = kept->layers[static_cast<std::size_t>(l - t.first_layer)];
    // The loss is the mean over the whole batch: every replica's samples (data parallelism).
    if constexpr (LendsBlockInputs<B>::value) {
      // A block input the next layer of this task adds (and that layer's own input is not one):
      // lent to it and given back, one buffer.
      const auto feeds = [&](std::int32_t layer) { return feeds_residual(net_.layers, static_cast<std::size_t>(layer)); };
      const bool lend = feeds(l) && l < t.last_layer && !feeds(l + 1);
      const bool give_back = lent;
      in = b_.forward(lane, l, *w, std::move(in), stash, &labels, loss_scale, loss, ShortcutHandoff{lend, give_back});
      if (give_back) kept->layers[static_cast<std::size_t>(l - 1 - t.first_layer)].input = std::move(in.shortcut);
      lent = lend;
    } else {
      in = b_.forward(lane, l, *w, std::move(in), stash, &labels, loss_scale, loss);
    }
    record_layer(t, lane, l, t.kind, begin);
  }
  kept->owner = t.id;
  kept->location = t.resource;
  kept->bytes = stash_bytes(kept->layers);
  memory_.allocate({BufferKind::stash, t.id, -1}, t.resource, kept->bytes, t.id);
  return kept;
}

template <typename B>
void GraphExecution<B>::keep_stash(const Task& t, std::shared_ptr<Stash> kept) {
  if constexpr (PacksTensors<B>::value) {
    if (distributed() && !ship_to_[static_cast<std::size_t>(t.id)].empty()) {  // for another rank's readers
      ByteWriter w;
      w.value(static_cast<std::int64_t>(kept->layers.size()));
      for (const auto& layer : kept->layers) b_.pack(w, layer);
      shipped_[static_cast<std::size_t>(t.id)] = std::move(w.bytes());
    }
  }
  const auto& readers_of = distributed() ? stash_readers_here_ : flow_.stash_readers;
  const auto readers = readers_of.find(flow_.stash_key(t));
  kept->readers_left = readers == readers_of.end() ? 0 : readers->second;
  if (kept->readers_left > 0) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    stashes_[flow_.stash_key(t)] = std::move(kept);
  } else {
    memory_.release({BufferKind::stash, kept->owner, -1}, t.resource, kept->bytes, t.id);
  }
}

// Whether `t` may take `source`'s output field `carries` over instead of copying it: it is that
// field's only reader, on the processor that made it, or (TakesOverArrivals, within one process)
// on the processor a transfer brought it to. The bytes stay accounted to the output until its
// readers end, as the graph declares.
template <typename B>
bool GraphExecution<B>::takes_over(const Task& t, std::int32_t source, Carries carries) const {
  const Task& producer = task(source);
  const auto readers = flow_.field_readers.find({source, carries});
  if (readers == flow_.field_readers.end() || readers->second != 1 || t.placement != Placement::processor) return false;
  if (producer.placement == Placement::processor) return producer.resource == t.resource;
  return TakesOverArrivals<B>::value && !distributed() && producer.kind == TaskKind::X && producer.collective < 0 &&
         link_of(producer).dst == t.resource;
}

// A forward's input: the task before it's output, taken over where it may be, else a copy.
template <typename B>
typename GraphExecution<B>::Activation GraphExecution<B>::input_activation(const Task& t, Lane& lane) {
  const std::int32_t source = the_dep(g_, t, Carries::activation).task;
  if (takes_over(t, source, Carries::activation)) return std::move(payloads_[static_cast<std::size_t>(source)]->activation);
  return b_.copy(lane, payload(source).activation, t.resource);
}

template <typename B>
void GraphExecution<B>::forward(const Task& t, Lane& lane, Payload& out) {
  const std::int64_t n = g_.samples_per_microbatch;
  Activation in;
  Labels labels;
  const bool last = t.last_layer + 1 == static_cast<std::int32_t>(net_.size());
  const bool first = t.first_layer == 0;
  if (first || last) {
    const auto begin = layer_begin(lane);
    b_.load(lane, t.minibatch, sampled_microbatch(t), first ? &in : nullptr, last ? &labels : nullptr);
    // Timed apart at the input, where it copies a microbatch (a calibration's input_load_s); the
    // output's labels alone are a few bytes.
    if (first) record_layer(t, lane, kInputLoadLayer, t.kind, begin);
  }
  if (!first) in = input_activation(t, lane);
  if (b_.samples_of(in) != n) throw Error("internal: forward input has " + std::to_string(b_.samples_of(in)) + " samples");
  const bool recomputed = flow_.recomputed[static_cast<std::size_t>(t.id)];
  if (recomputed) {  // keep only the stage's input; the recomputation runs the layers again from it
    auto input = std::make_shared<KeptInput>(KeptInput{b_.copy(lane, in, t.resource), t.id, t.resource, 0});
    input->bytes = b_.bytes(input->activation);
    memory_.allocate({BufferKind::kept_input, t.id, -1}, t.resource, input->bytes, t.id);
    std::lock_guard<std::mutex> lock(registry_mutex_);
    inputs_[flow_.stash_key(t)] = std::move(input);
  }
  double loss = 0;
  std::shared_ptr<Stash> kept = run_forward_layers(t, lane, in, labels, &loss);
  if (last) {
    if (!std::isfinite(loss)) {
      throw Error("training diverged: the loss is not finite at minibatch " + std::to_string(t.minibatch) +
                  ", microbatch " + std::to_string(t.microbatch) + " (try a smaller learning rate)");
    }
    std::int32_t finished_minibatch = -1;
    {
      std::lock_guard<std::mutex> lock(registry_mutex_);
      loss_sum_[static_cast<std::size_t>(t.minibatch)] += loss;
      if (++loss_parts_[static_cast<std::size_t>(t.minibatch)] == g_.microbatches * flow_.replicas) finished_minibatch = t.minibatch;
    }
    if (finished_minibatch >= 0 && options_.on_minibatch) options_.on_minibatch(finished_minibatch + 1);
  }
  if (recomputed) {
    b_.finish(lane);
    memory_.release({BufferKind::stash, t.id, -1}, t.resource, kept->bytes, t.id);  // the RC makes it again
  } else {
    keep_stash(t, std::move(kept));
  }
  if (!last) out.activation = std::move(in);
}

// RC: the forward's layers again, from the input it kept and with the version it read, so the
// stash its backwards read is the one the forward made (bit for bit; the loss is not counted twice).
template <typename B>
void GraphExecution<B>::recompute(const Task& t, Lane& lane) {
  std::shared_ptr<KeptInput> input;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    const auto it = inputs_.find(flow_.stash_key(t));
    if (it == inputs_.end()) throw Error("schedule error: " + describe_task(g_, t) + " runs before its forward");
    input = std::move(it->second);
    inputs_.erase(it);
  }
  Activation in = b_.copy(lane, input->activation, t.resource);
  Labels labels;
  if (t.last_layer + 1 == static_cast<std::int32_t>(net_.size())) b_.load(lane, t.minibatch, sampled_microbatch(t), nullptr, &labels);
  double loss = 0;
  keep_stash(t, run_forward_layers(t, lane, in, labels, &loss));
  b_.finish(lane);
  memory_.release({BufferKind::kept_input, input->owner, -1}, input->location, input->bytes, t.id);
}

// The gradient at the output of the task's last layer, assembled from the activation-gradient
// slices its dependencies carry (each knows its columns); *found is false when none do.
template <typename B>
typename B::Gradient GraphExecution<B>::output_gradient(const Task& t, Lane& lane, bool* found) {
  std::vector<const Gradient*> slices;
  std::int32_t source = -1;
  for (const auto& d : t.deps) {
    if (d.carries != Carries::activation_gradient) continue;
    slices.push_back(&payload(d.task).input_gradient);
    source = d.task;
  }
  *found = !slices.empty();
  if (slices.empty()) return Gradient();
  // One producer of every sample (not a part of a split), read by this task alone on its own
  // processor: taken over.
  if (slices.size() == 1 && task(source).parts == 1 && takes_over(t, source, Carries::activation_gradient)) {
    return std::move(payloads_[static_cast<std::size_t>(source)]->input_gradient);
  }
  if (!flow_.assembles[static_cast<std::size_t>(t.id)]) return b_.assemble(lane, slices, g_.samples_per_microbatch);
  const auto begin = layer_begin(lane);  // timed apart: the table's assembly_s
  Gradient whole = b_.assemble(lane, slices, g_.samples_per_microbatch);
  record_layer(t, lane, kGradientAssemblyLayer, t.kind, begin);
  return whole;
}

template <typename B>
std::shared_ptr<const typename B::Gradient> GraphExecution<B>::shared_output_gradient(const Task& t, Lane& lane) {
  const std::int32_t group = flow_.assembly_group[static_cast<std::size_t>(t.id)];
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    const auto it = assembled_.find(group);
    if (it != assembled_.end()) {
      std::shared_ptr<const Gradient> gradient = it->second.first;
      if (--it->second.second == 0) assembled_.erase(it);
      return gradient;
    }
  }
  // The first of the group: the slices (on this processor, read by this group alone, whose other
  // tasks run after) assembled as any reader's would be; a group has several readers, so none
  // takes them over.
  bool found = false;
  auto gradient = std::make_shared<const Gradient>(output_gradient(t, lane, &found));
  // The slices' room goes back at once: the assembled gradient holds their bytes, which stay
  // accounted to their tasks' outputs until the group's last task ends, as the graph declares.
  b_.finish(lane);
  for (const auto& d : t.deps) {
    if (d.carries == Carries::activation_gradient) payloads_[static_cast<std::size_t>(d.task)]->input_gradient = Gradient();
  }
  std::lock_guard<std::mutex> lock(registry_mutex_);
  assembled_[group] = {gradient, flow_.assembly_readers[static_cast<std::size_t>(group)] - 1};
  return gradient;
}

template <typename B>
void GraphExecution<B>::backward(const Task& t, Lane& lane, Payload& out) {
  const std::int64_t n = g_.samples_per_microbatch;
  const bool last = t.last_layer + 1 == static_cast<std::int32_t>(net_.size());
  const std::shared_ptr<Stash> kept = stash(t);
  const std::int32_t layers = t.last_layer - t.first_layer + 1;
  std::vector<Gradient> at_output(static_cast<std::size_t>(layers));  // per layer, at its output
  bool found = false;
  for (const auto& d : t.deps) {  // a split backward: the BA of the same layers kept the gradients
    if (d.carries != Carries::output_gradients) continue;
    auto& kept_gradients = payloads_[static_cast<std::size_t>(d.task)]->output_gradients;
    const bool take = takes_over(t, d.task, Carries::output_gradients);
    for (std::size_t i = 0; i < kept_gradients.size(); ++i) {
      at_output[i] = take ? std::move(kept_gradients[i]) : b_.copy(lane, kept_gradients[i], t.resource);
    }
    found = true;
  }
  std::shared_ptr<const Gradient> assembled;  // the gradient at the output, shared with its group
  if (!found && !last) {
    if (flow_.assembly_group[static_cast<std::size_t>(t.id)] >= 0) {
      assembled = shared_output_gradient(t, lane);
      found = true;
    } else {
      at_output.back() = output_gradient(t, lane, &found);
    }
  }
  found = found || last;
  if (!found) throw Error("schedule error: " + describe_task(g_, t) + " has no dependency bringing its output gradient");
  std::vector<Params> grads(static_cast<std::size_t>(layers));
  const bool needs_input_grad = t.kind != TaskKind::BW;
  const bool needs_weight_grad = t.kind != TaskKind::BA;
  const std::int32_t u = needs_weight_grad ? flow_.accumulate_into[static_cast<std::size_t>(t.id)] : -1;
  std::vector<Params>* sum = nullptr;  // the update's sum, where this task adds into it in place
  bool starts_sum = false;             // this task's gradients begin it
  if (u >= 0 && sums_in_place_[static_cast<std::size_t>(u)]) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    sum = &accumulators_[u];  // a map's entry stays where it is while others come and go
    starts_sum = sum->empty();
    if (starts_sum) sum->resize(static_cast<std::size_t>(layers));
  }
  for (std::int32_t l = t.last_layer; l >= t.first_layer; --l) {
    const auto i = static_cast<std::size_t>(l - t.first_layer);
    const bool input_grad = needs_input_grad && l > 0;  // nothing needs the gradient of the network's input
    if (!input_grad && !needs_weight_grad) continue;
    const ParamsPtr w = weights(l, t.version_read, t);
    const Gradient* og = (l + 1 == static_cast<std::int32_t>(net_.size())) ? nullptr
                         : (assembled && l == t.last_layer)         ? assembled.get()
                                                                    : &at_output[i];
    // Back to the linear output once, then the weight and the input gradients from it. The layer
    // times record what a split BA and BW would each cost (both go back to the linear output)
    // and, for a fused B, what it cost.
    auto begin = layer_begin(lane);
    const bool adds = sum != nullptr && !starts_sum;  // into a sum an earlier backward began
    if (needs_weight_grad && !adds) (sum ? (*sum)[i] : grads[i]) = b_.gradient_buffer(lane, l);
    Params* grad = needs_weight_grad ? (sum ? &(*sum)[i] : &grads[i]) : nullptr;
    const auto linear = [&] {
      if constexpr (AddsIntoGradients<B>::value) {
        return b_.to_linear(lane, l, *w, kept->layers[i], og, input_grad, grad, adds);
      } else {
        return b_.to_linear(lane, l, *w, kept->layers[i], og, input_grad, grad);
      }
    }();
    const LayerSpan to_linear = layer_span(lane, begin);
    LayerSpan weight_part, input_part;
    if (needs_weight_grad) {
      begin = layer_begin(lane);
      if constexpr (AddsIntoGradients<B>::value) {
        b_.weight_gradient(lane, l, kept->layers[i], linear, *grad, adds);
      } else {
        b_.weight_gradient(lane, l, kept->layers[i], linear, *grad);
      }
      weight_part = layer_span(lane, begin);
      record_layer_spans(t, l, TaskKind::BW, {to_linear, weight_part});
    }
    if (input_grad) {
      std::int64_t sample_begin = 0, sample_end = n;  // the samples of this BA part
      if (l == t.first_layer) {
        const SampleRange part = part_samples(t, n);
        sample_begin = part.begin;
        sample_end = part.end;
      }
      begin = layer_begin(lane);
      Gradient in = b_.input_gradient(lane, l, *w, linear, og, sample_begin, sample_end);
      input_part = layer_span(lane, begin);
      record_layer_spans(t, l, TaskKind::BA, {to_linear, input_part});
      if (l > t.first_layer) {
        at_output[i - 1] = std::move(in);
      } else {
        out.input_gradient = std::move(in);
      }
    }
    if (t.kind == TaskKind::B) {
      LayerSpans spans{to_linear};
      if (needs_weight_grad) spans.push_back(weight_part);
      if (input_grad) spans.push_back(input_part);
      record_layer_spans(t, l, TaskKind::B, spans);
    }
  }
  if (flow_.sends_output_gradients[static_cast<std::size_t>(t.id)]) out.output_gradients = std::move(at_output);
  if (!needs_weight_grad) return;
  if (sum != nullptr) {
    if (starts_sum) {  // accounted as before it was in place: from the end of the task that begins it
      std::int64_t bytes = 0;
      for (const auto& gr : *sum) bytes += b_.bytes(gr);
      memory_.allocate({BufferKind::gradient_sum, u, task(u).stage}, t.resource, bytes, t.id);
    }
  } else if (u >= 0) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    auto& kept_sum = accumulators_[u];
    if (kept_sum.empty()) {
      std::int64_t bytes = 0;
      for (const auto& gr : grads) bytes += b_.bytes(gr);
      memory_.allocate({BufferKind::gradient_sum, u, task(u).stage}, t.resource, bytes, t.id);
      kept_sum = std::move(grads);
    } else {
      for (std::size_t i = 0; i < grads.size(); ++i) b_.accumulate(lane, kept_sum[i], grads[i]);
    }
  } else if (flow_.sends_weight_gradient[static_cast<std::size_t>(t.id)]) {
    out.weight_gradients = std::move(grads);
  }
}

template <typename B>
void GraphExecution<B>::update(const Task& t, Lane& lane) {
  const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
  std::vector<Params> sum;
  std::int64_t accumulated_bytes = 0;
  std::int32_t collective = -1;  // the all-reduce of the replicas' gradient sums it waits for
  for (const auto& d : t.deps) collective = std::max(collective, task(d.task).collective);
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    if (collective >= 0 && reduced_.find(collective) == reduced_.end()) {
      // The first of the all-reduce's updates to run sums every replica's gradients, in rank
      // order (so every replica gets the same bits); its steps have all ended, so every sum is
      // complete, and none is taken before this.
      const auto& updates = flow_.collective_updates.at(collective);
      std::vector<Params> total;
      for (const auto u : updates) {
        const auto& part = accumulators_.at(u);
        if (total.empty()) {
          for (const auto& g : part) total.push_back(b_.clone(lane, g));
        } else {
          for (std::size_t i = 0; i < total.size(); ++i) b_.accumulate(lane, total[i], part[i]);
        }
      }
      std::int32_t users = 0;  // the updates here that take the sum
      for (const auto u : updates) {
        if (!distributed() || task_rank_[static_cast<std::size_t>(u)] == rank_) {
          ++users;
        } else {
          drop_arrived_sum(u);
        }
      }
      reduced_[collective] = {std::move(total), users};
    }
    const auto it = accumulators_.find(t.id);
    if (it != accumulators_.end()) {
      sum = std::move(it->second);
      accumulators_.erase(it);
      for (const auto& s : sum) accumulated_bytes += b_.bytes(s);
    }
    if (collective >= 0) {  // the replicas' sum replaces its own
      auto& [total, users] = reduced_.at(collective);
      sum.clear();
      for (const auto& g : total) sum.push_back(b_.clone(lane, g));
      if (--users == 0) reduced_.erase(collective);
    }
  }
  // Gradients that arrived over links, in microbatch order (not an all-reduce's steps: they
  // only move the bytes; the sum is taken above).
  std::vector<std::int32_t> arrived;
  for (const auto& d : t.deps) {
    if (d.carries == Carries::weight_gradient && is_link_task(task(d.task)) && task(d.task).collective < 0) {
      arrived.push_back(d.task);
    }
  }
  std::sort(arrived.begin(), arrived.end(), [&](std::int32_t a, std::int32_t b) {
    return task(a).microbatch < task(b).microbatch;
  });
  for (const auto d : arrived) {
    const auto& grads = payload(d).weight_gradients;
    if (sum.empty()) {
      for (const auto& g : grads) sum.push_back(b_.clone(lane, g));
    } else {
      for (std::size_t i = 0; i < sum.size(); ++i) b_.accumulate(lane, sum[i], grads[i]);
    }
  }
  const std::int32_t layers = stage.last_layer - stage.first_layer + 1;
  if (static_cast<std::int32_t>(sum.size()) != layers) {
    throw Error("schedule error: " + describe_task(g_, t) + " has no weight gradient to apply");
  }
  for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
    const auto begin = layer_begin(lane);
    const auto i = static_cast<std::size_t>(l - stage.first_layer);
    const ParamsPtr old = weights(l, t.version_read, t);
    Params* velocity = options_.momentum > 0 ? &momentum_[static_cast<std::size_t>(flow_.layer_key(t, l))] : nullptr;
    store_weights(flow_.layer_key(t, l), t.version_written,
                  std::make_shared<const Params>(b_.sgd(lane, *old, std::move(sum[i]), velocity, options_.learning_rate, options_.momentum)));
    record_layer(t, lane, l, TaskKind::U, begin);
  }
  memory_.allocate({BufferKind::weights, t.id, t.stage}, stage.processor, stage_weight_bytes(t.stage, t.version_written), t.id);
  if constexpr (PacksTensors<B>::value) {
    if (distributed() && !ship_to_[static_cast<std::size_t>(t.id)].empty()) {  // for another rank's readers
      ByteWriter w;
      w.value(static_cast<std::int64_t>(stage.last_layer - stage.first_layer + 1));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) b_.pack(w, *weights(l, t.version_written, t));
      shipped_[static_cast<std::size_t>(t.id)] = std::move(w.bytes());
    }
  }
  b_.finish(lane);  // the sums are freed below
  memory_.release({BufferKind::gradient_sum, t.id, t.stage}, t.resource, accumulated_bytes, t.id);
}

// X, OFF, ON: copy the data into a buffer at the other end.
template <typename B>
void GraphExecution<B>::move(const Task& t, Lane& lane, Payload& out) {
  const std::int32_t from = link_of(t).src;
  // Across ranks a copy stays with the sender until its message takes it (the receiving rank
  // places what arrives: unpack).
  const std::int32_t to = sends_away(t) ? from : link_of(t).dst;
  if (t.kind == TaskKind::OFF || t.kind == TaskKind::ON) {
    const std::shared_ptr<Stash> kept = stash(t);
    std::vector<LayerStash> copy;  // the copy over the link
    for (const auto& layer : kept->layers) copy.push_back(b_.copy(lane, layer, to));
    b_.finish(lane);
    memory_.allocate({BufferKind::stash, kept->owner, -1}, to, kept->bytes, t.id);
    kept->layers = std::move(copy);
    memory_.release({BufferKind::stash, kept->owner, -1}, from, kept->bytes, t.id);
    kept->location = to;
    return;
  }
  if (t.collective >= 0) {  // an all-reduce's step: its bytes cross the link; the update sums them
    b_.move_bytes(lane, t.bytes, to);
    return;
  }
  const Dep* moved = data_dependency(t);  // what the transfer carries
  if (moved == nullptr) throw Error("schedule error: " + describe_task(g_, t) + " has nothing to move");
  const Task& source = task(moved->task);
  if (!reads_output(source, t, *moved)) {  // from a registry: a forward's stash, an update's version
    if (moved->carries == Carries::stash) {  // the forward's stash, for a backward elsewhere
      const bool without_input = flow_.stash_without_input[static_cast<std::size_t>(t.id)];
      for (const auto& layer : stash(source)->layers) out.stash.push_back(copy_stash(lane, layer, to, without_input));
    } else if (moved->carries == Carries::weights) {
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        out.weights.push_back(std::make_shared<const Params>(b_.copy(lane, *weights(l, source.version_written, t), to)));
      }
    } else {
      throw Error("schedule error: " + describe_task(g_, t) + " cannot move " + to_string(moved->carries) +
                  " from " + describe_task(g_, source));
    }
    return;
  }
  // Across ranks the message is the copy: a field only this transfer reads goes as it is.
  const auto readers = flow_.field_readers.find({moved->task, moved->carries});
  const bool hand_over = sends_away(t) && readers != flow_.field_readers.end() && readers->second == 1;
  Payload& in = *payloads_[static_cast<std::size_t>(moved->task)];  // the previous hop's copy, or the source's output
  const auto carry = [&](auto& field) -> std::decay_t<decltype(field)> {
    if (hand_over) return std::move(field);
    return b_.copy(lane, field, to);
  };
  switch (moved->carries) {
    case Carries::stash:
      for (auto& layer : in.stash) out.stash.push_back(carry(layer));
      break;
    case Carries::activation:
      out.activation = carry(in.activation);
      break;
    case Carries::activation_gradient:
      out.input_gradient = carry(in.input_gradient);
      break;
    case Carries::weight_gradient:
      for (auto& g : in.weight_gradients) out.weight_gradients.push_back(carry(g));
      break;
    case Carries::weights:
      for (const auto& w : in.weights) out.weights.push_back(std::make_shared<const Params>(b_.copy(lane, *w, to)));
      break;
    default:
      throw Error("schedule error: " + describe_task(g_, t) + " cannot move " + to_string(moved->carries));
  }
}

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

// A processor's tasks run on its rank; a link's on the rank of its processor end (the sender's,
// between two processors).
template <typename B>
std::int32_t GraphExecution<B>::rank_of_task(const Task& t) const {
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  const std::int32_t ranks = options_.distribution->transport->ranks();
  if (t.placement == Placement::processor) return rank_of_processor(t.resource, processors, ranks);
  return rank_of_link(link_of(t), processors, ranks);
}

template <typename B>
std::int32_t GraphExecution<B>::receiving_rank(const Task& t) const {
  return rank_of_processor(link_of(t).dst, static_cast<std::int32_t>(g_.processors.size()),
                           options_.distribution->transport->ranks());
}

template <typename B>
bool GraphExecution<B>::sends_away(const Task& t) const {
  if (!distributed() || !is_link_task(t) || t.kind != TaskKind::X || t.collective >= 0) return false;
  return link_of(t).dst != kHost && receiving_rank(t) != rank_of_task(t);
}

// Which rank runs each task, which other ranks each of this rank's tasks must tell, and how many
// messages this rank will receive. Refuses graphs whose data would cross ranks other than by a
// transfer to the reading task's processor, a shipped stash or version, or an all-reduce's step.
template <typename B>
void GraphExecution<B>::plan_ranks() {
  const RankTransport& transport = *options_.distribution->transport;
  rank_ = transport.rank();
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  if (transport.ranks() > processors) {
    throw Error("a run across processes needs at least one processor per rank: " + std::to_string(transport.ranks()) +
                " ranks, but the graph has " + std::to_string(processors) + " processors");
  }
  if (!(options_.distribution->message_timeout_s > 0)) throw Error("the message timeout must be positive");
  if (!PacksTensors<B>::value) throw Error("the " + name_ + " executor cannot run across processes yet");
  const auto n = g_.tasks.size();
  task_rank_.resize(n);
  for (const auto& t : g_.tasks) task_rank_[static_cast<std::size_t>(t.id)] = rank_of_task(t);
  notify_.assign(n, {});
  ship_to_.assign(n, {});
  shipped_.assign(n, {});
  reads_registry_.assign(n, false);
  std::set<std::pair<std::int32_t, std::int32_t>> heard;  // (task, rank): the task's end reaches that rank
  const auto hear = [&](std::int32_t source, std::int32_t to) {
    const std::int32_t from = task_rank_[static_cast<std::size_t>(source)];
    if (from == to || !heard.insert({source, to}).second) return;
    if (to == rank_) ++messages_expected_;
    if (from == rank_) notify_[static_cast<std::size_t>(source)].push_back(to);
  };
  plan_stashes(hear);
  plan_versions(hear);
  plan_registry_readers();
  plan_collectives(hear);
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    for (const auto& d : t.deps) {
      const Task& source = task(d.task);
      const std::int32_t from = task_rank_[static_cast<std::size_t>(d.task)];
      if (from == to) continue;
      // What crosses ranks: a transfer's data, to the rank of its receiving processor; a stash,
      // which its maker ships to every rank that reads it (plan_stashes); an all-reduce step's
      // gradient sums (plan_collectives); or the end of a task.
      const bool carried = (sends_away(source) && to == receiving_rank(source)) || source.collective >= 0;
      if (d.carries != Carries::order && d.carries != Carries::stash && !carried) {
        throw Error("a run across processes cannot run " + describe_task(g_, t) + " on rank " + std::to_string(to) +
                    ": it reads the " + to_string(d.carries) + " of " + describe_task(g_, source) + " on rank " +
                    std::to_string(from) + " without a transfer to its processor");
      }
      hear(d.task, to);
    }
    if (sends_away(t)) hear(t.id, receiving_rank(t));  // its data
  }
}

// The stash a task reads from the registry, when it reads one: a backward's own; an offload's or
// reload's (move() reads stash(t)); a transfer's that copies a forward's stashed input.
template <typename B>
bool GraphExecution<B>::reads_stash(const Task& t, StashKey* key) const {
  if (!is_link_task(t)) {
    if (!is_backward(t.kind)) return false;
    *key = flow_.stash_key(t);
    return true;
  }
  if (t.kind == TaskKind::OFF || t.kind == TaskKind::ON) {
    *key = flow_.stash_key(t);
    return true;
  }
  const Dep* moved = data_dependency(t);
  if (moved == nullptr || moved->carries != Carries::stash || t.collective >= 0 || reads_output(task(moved->task), t, *moved)) return false;
  *key = flow_.stash_key(task(moved->task));
  return true;
}

// Across ranks, a stash that transfers bring to every reader on this rank (plan_stashes) is this
// rank's registry entry, which its backwards read: the first copy to arrive is moved in, and a
// later one adds the forward's input where the first lacked it (a BA part's copy has none, a
// BW's has). The bytes stay accounted as the transfers' outputs, as the graph declares them.
template <typename B>
void GraphExecution<B>::keep_transferred_stash(const Task& x) {
  if (!distributed() || x.kind != TaskKind::X) return;
  Payload& p = *payloads_[static_cast<std::size_t>(x.id)];
  if (p.stash.empty()) return;
  const Task& source = origin(x);
  const StashKey key = flow_.stash_key(source);
  if (stash_by_transfer_here_.count(key) == 0) return;
  if (!last_stash_hop_[static_cast<std::size_t>(x.id)]) return;  // an earlier hop: the last one keeps it
  std::lock_guard<std::mutex> lock(registry_mutex_);
  auto& kept = stashes_[key];
  if (!kept) {
    kept = std::make_shared<Stash>();
    kept->layers = std::move(p.stash);
    kept->owner = source.id;
    kept->location = link_of(x).dst;
    kept->readers_left = stash_readers_here_.at(key);
    return;
  }
  for (std::size_t i = 0; i < kept->layers.size() && i < p.stash.size(); ++i) {
    if (b_.bytes(kept->layers[i].input) == 0) kept->layers[i].input = std::move(p.stash[i].input);
  }
}

// A stash read on another rank than its maker's (the forward, or its recomputation) is shipped
// with the maker's announcement; announcements precede the maker's dependents (run_task), so it
// arrives before any transfer that follows the maker. Where every reader on a rank has the stash
// brought by a transfer (LayerPipe's backwards away from their forward's processor), the
// transfers' copies are that rank's stash instead (keep_transferred_stash), and nothing is
// shipped. A recomputation must run on its forward's rank.
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_stashes(Hear& hear) {
  std::map<StashKey, std::int32_t> maker;
  std::map<StashKey, std::int32_t> forward;
  for (const auto& t : g_.tasks) {
    if (is_link_task(t)) continue;
    if (t.kind == TaskKind::F) forward[flow_.stash_key(t)] = t.id;
    if ((t.kind == TaskKind::F && !flow_.recomputed[static_cast<std::size_t>(t.id)]) || t.kind == TaskKind::RC) {
      maker[flow_.stash_key(t)] = t.id;
    }
  }
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    if (t.kind == TaskKind::RC) {
      const auto f = forward.find(flow_.stash_key(t));
      if (f != forward.end() && task_rank_[static_cast<std::size_t>(f->second)] != to) {
        throw Error("a run across processes cannot run " + describe_task(g_, t) + " on rank " + std::to_string(to) +
                    ": it recomputes from the input kept by " + describe_task(g_, task(f->second)) + " on rank " +
                    std::to_string(task_rank_[static_cast<std::size_t>(f->second)]));
      }
    }
  }
  // Per stash and reading rank: whether every reader there has it brought by a transfer.
  std::map<std::pair<StashKey, std::int32_t>, bool> all_by_transfer;
  last_stash_hop_.assign(g_.tasks.size(), false);
  for (const auto& t : g_.tasks) {
    const std::int32_t brought = flow_.stash_transfer[static_cast<std::size_t>(t.id)];
    if (brought >= 0) last_stash_hop_[static_cast<std::size_t>(brought)] = true;
    StashKey key;
    if (!reads_stash(t, &key)) continue;
    const auto [at, added] = all_by_transfer.emplace(std::make_pair(key, task_rank_[static_cast<std::size_t>(t.id)]), true);
    at->second = at->second && brought >= 0;
  }
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    StashKey key;
    if (!reads_stash(t, &key)) continue;
    const auto m = maker.find(key);
    if (m == maker.end() || task_rank_[static_cast<std::size_t>(m->second)] == to) continue;
    if (all_by_transfer.at({key, to})) {  // the transfers' copies are this rank's stash
      if (to == rank_) stash_by_transfer_here_.insert(key);
      continue;
    }
    auto& ranks = ship_to_[static_cast<std::size_t>(m->second)];
    if (std::find(ranks.begin(), ranks.end(), to) == ranks.end()) ranks.push_back(to);
    hear(m->second, to);
    if (to != rank_) continue;
    // Kept where this rank's first reader takes it from: host memory for a reload, else the reader's processor.
    const std::int32_t home = is_link_task(t) ? link_of(t).src : t.resource;
    auto [at, added] = stash_home_here_.emplace(key, home);
    if (!added && is_link_task(t)) at->second = home;
  }
}

// A weight version read on another rank than its update's, by a task of the stage that no
// transfer brings it to (LayerPipe's BW near its layer's home), is shipped with the update's
// announcement, which precedes everything that follows the update (run_task). (That rank's copy
// is not accounted: the graph declares none.)
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_versions(Hear& hear) {
  for (const auto& t : g_.tasks) {
    if (is_link_task(t) || t.stage < 0 || t.version_read < 0) continue;
    const auto writer = flow_.version_writer.find({t.stage, t.version_read});
    if (writer == flow_.version_writer.end()) continue;  // the initial weights: every rank has them
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    if (task_rank_[static_cast<std::size_t>(writer->second)] == to) continue;
    auto& ranks = ship_to_[static_cast<std::size_t>(writer->second)];
    if (std::find(ranks.begin(), ranks.end(), to) == ranks.end()) ranks.push_back(to);
    hear(writer->second, to);
  }
}

// This rank's readers of each stash and weight version: its backwards and its stages' tasks, and
// its transfers that copy a stash or a version out of the registry (each frees after its last
// reader here).
template <typename B>
void GraphExecution<B>::plan_registry_readers() {
  for (const auto& t : g_.tasks) {
    if (task_rank_[static_cast<std::size_t>(t.id)] != rank_) continue;
    StashKey key;
    if (reads_stash(t, &key)) {
      ++stash_readers_here_[key];
      if (is_link_task(t) && t.kind == TaskKind::X) reads_registry_[static_cast<std::size_t>(t.id)] = true;
    }
    if (!is_link_task(t)) {
      if (t.stage >= 0 && t.version_read >= 0) {
        const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
        for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++version_readers_here_[{flow_.layer_key(t, l), t.version_read}];
      }
      continue;
    }
    const Dep* moved = data_dependency(t);
    if (moved == nullptr || moved->carries != Carries::weights || t.collective >= 0 || reads_output(task(moved->task), t, *moved)) continue;
    const Task& source = task(moved->task);
    if (source.stage < 0) continue;
    const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
    for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++version_readers_here_[{flow_.layer_key(source, l), source.version_written}];
    reads_registry_[static_cast<std::size_t>(t.id)] = true;
  }
}

// Data parallelism: each all-reduce step that crosses ranks carries the replicas' gradient sums
// its receiving rank lacks (collective_shipments.hpp), so that every rank's updates sum every
// replica's, in rank order, as one process does. Another rank's sum is kept here from its first
// arrival until the last thing that happens to it here: another arrival, a step carrying it on,
// or this rank's sum of the replicas.
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_collectives(Hear& hear) {
  if (g_.collectives.empty()) return;
  step_carries_ = plan_collective_shipments(g_, flow_, task_rank_, options_.distribution->transport->ranks());
  for (const auto& [step, sums] : step_carries_) {
    const std::int32_t to = receiving_rank(task(step));
    ship_to_[static_cast<std::size_t>(step)] = {to};
    hear(step, to);
    const auto& updates = flow_.collective_updates.at(task(step).collective);
    const bool sums_here = std::any_of(updates.begin(), updates.end(),
                                       [&](std::int32_t u) { return task_rank_[static_cast<std::size_t>(u)] == rank_; });
    for (const auto v : sums) {
      if (to == rank_) {  // an arrival, and (once) this rank's sum of the replicas
        const bool first = arrived_sum_uses_.find(v) == arrived_sum_uses_.end();
        arrived_sum_uses_[v] += 1 + (first && sums_here ? 1 : 0);
      }
      if (task_rank_[static_cast<std::size_t>(step)] == rank_ && task_rank_[static_cast<std::size_t>(v)] != rank_) ++arrived_sum_uses_[v];
    }
  }
}

// An all-reduce step's shipment: (count, then per sum: its update's id, its layers' gradients).
template <typename B>
void GraphExecution<B>::pack_carried_sums(const Task& step) {
  if constexpr (PacksTensors<B>::value) {
    const auto carries = step_carries_.find(step.id);
    if (carries == step_carries_.end()) return;
    ByteWriter w;
    w.value(static_cast<std::int64_t>(carries->second.size()));
    std::lock_guard<std::mutex> lock(registry_mutex_);
    for (const auto v : carries->second) {
      const auto sum = accumulators_.find(v);
      if (sum == accumulators_.end()) {
        throw Error("internal: " + describe_task(g_, step) + " carries the gradient sum of " + describe_task(g_, task(v)) +
                    ", which rank " + std::to_string(rank_) + " does not hold");
      }
      w.value(static_cast<std::int64_t>(v));
      w.value(static_cast<std::int64_t>(sum->second.size()));
      for (const auto& g : sum->second) b_.pack(w, g);
      if (task_rank_[static_cast<std::size_t>(v)] != rank_) drop_arrived_sum(v);
    }
    shipped_[static_cast<std::size_t>(step.id)] = std::move(w.bytes());
  }
}

template <typename B>
void GraphExecution<B>::drop_arrived_sum(std::int32_t update) {
  const auto uses = arrived_sum_uses_.find(update);
  if (uses != arrived_sum_uses_.end() && --uses->second > 0) return;
  accumulators_.erase(update);
}

// A backward adds its weight gradients straight into its update's sum (no buffer of its own, no
// pass to add it, no lock held while it adds) where the backend adds into gradients and every
// backward that sums into that update runs on one thread, so that they add one at a time.
template <typename B>
void GraphExecution<B>::plan_sums_in_place() {
  sums_in_place_.assign(g_.tasks.size(), false);
  if constexpr (AddsIntoGradients<B>::value) {
    std::vector<std::int32_t> thread(g_.tasks.size(), -1);  // per update: the thread of its backwards
    for (const auto& t : g_.tasks) {
      const std::int32_t u = flow_.accumulate_into[static_cast<std::size_t>(t.id)];
      if (u < 0) continue;
      const std::int32_t runner = threads_.runner[static_cast<std::size_t>(t.id)];
      auto& first = thread[static_cast<std::size_t>(u)];
      if (first == -1) {
        first = runner;
        sums_in_place_[static_cast<std::size_t>(u)] = true;
      } else if (first != runner) {
        sums_in_place_[static_cast<std::size_t>(u)] = false;
      }
    }
  }
}

// The other ranks waiting for `t`: a transfer's receiver has its data already (sends_away).
template <typename B>
void GraphExecution<B>::announce(const Task& t) {
  const std::int32_t receiver = sends_away(t) ? receiving_rank(t) : -1;
  static const std::vector<unsigned char> ended;
  const auto& ship_to = ship_to_[static_cast<std::size_t>(t.id)];
  for (const auto r : notify_[static_cast<std::size_t>(t.id)]) {
    if (r == receiver) continue;
    const bool shipping = std::find(ship_to.begin(), ship_to.end(), r) != ship_to.end();
    send_to_rank(r, t.id, shipping ? shipped_[static_cast<std::size_t>(t.id)] : ended);  // a copy each
  }
  shipped_[static_cast<std::size_t>(t.id)] = {};
}

template <typename B>
const Task& GraphExecution<B>::origin(const Task& t) const {
  const Task* at = &t;
  while (is_link_task(*at)) {
    const Dep* moved = data_dependency(*at);
    if (moved == nullptr) break;
    at = &task(moved->task);
  }
  return *at;
}

// What a message from another rank brings: a transfer's data (kept as its output; weight versions
// also in this rank's registry), or a forward's stash (kept for this rank's backwards).
template <typename B>
void GraphExecution<B>::keep_arrived(const Task& t, const RankMessage& message) {
  if (sends_away(t)) {
    std::unique_ptr<Payload> out = unpack_payload(message, link_of(t).dst);
    const Task& source = origin(t);
    if (!out->weights.empty() && source.stage >= 0) {
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        versions_.emplace(std::make_pair(flow_.layer_key(source, l), source.version_written),
                          out->weights.at(static_cast<std::size_t>(l - stage.first_layer)));
      }
    }
    keep(t, std::move(out), link_of(t).dst);
    keep_transferred_stash(t);
    return;
  }
  if (message.bytes.empty()) return;
  if constexpr (PacksTensors<B>::value) {
    ByteReader r(message);
    if (t.collective >= 0) {  // replicas' gradient sums, for this rank's updates
      const std::int64_t count = r.count<char>();
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int64_t i = 0; i < count; ++i) {
        const auto v = r.value<std::int64_t>();
        if (v < 0 || v >= static_cast<std::int64_t>(g_.tasks.size()) || task(static_cast<std::int32_t>(v)).kind != TaskKind::U) {
          throw Error("a message between ranks is malformed: a gradient sum of task " + std::to_string(v));
        }
        std::vector<Params> sum(static_cast<std::size_t>(r.count<char>()));
        for (auto& g : sum) b_.unpack(r, g, task(static_cast<std::int32_t>(v)).resource);
        accumulators_.try_emplace(static_cast<std::int32_t>(v), std::move(sum));  // the same sum, however often it comes
        drop_arrived_sum(static_cast<std::int32_t>(v));
      }
      return;
    }
    if (t.kind == TaskKind::U) {  // the version it wrote, for this rank's readers
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
      if (r.count<char>() != stage.last_layer - stage.first_layer + 1) throw Error("a message between ranks is malformed: a version's layers");
      // Placed with this rank's first processor (the CUDA executor runs a rank's processors on one GPU).
      const std::int32_t here = first_processor_of_rank(rank_, static_cast<std::int32_t>(g_.processors.size()),
                                                        options_.distribution->transport->ranks());
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        Params w;
        b_.unpack(r, w, here);
        versions_.emplace(std::make_pair(flow_.layer_key(t, l), t.version_written), std::make_shared<const Params>(std::move(w)));
      }
      return;
    }
    const StashKey key = flow_.stash_key(t);
    const auto home = stash_home_here_.find(key);
    const auto readers = stash_readers_here_.find(key);
    if (home == stash_home_here_.end() || readers == stash_readers_here_.end()) {
      throw Error("the stash of " + describe_task(g_, t) + " arrived from another rank, but no task of rank " +
                  std::to_string(rank_) + " reads it");
    }
    auto kept = std::make_shared<Stash>();
    kept->layers.resize(static_cast<std::size_t>(r.count<char>()));
    for (auto& layer : kept->layers) b_.unpack(r, layer, home->second);
    kept->owner = t.id;
    kept->location = home->second;
    kept->bytes = stash_bytes(kept->layers);
    kept->readers_left = readers->second;
    memory_.allocate({BufferKind::stash, t.id, -1}, kept->location, kept->bytes, t.id);
    std::lock_guard<std::mutex> lock(registry_mutex_);
    stashes_[key] = std::move(kept);
  }
}

// This rank's listener: keeps each arriving transfer's data as that transfer's output, and marks
// each announced task done, until every expected message has come or the run failed.
template <typename B>
void GraphExecution<B>::listen() {
  constexpr auto kPostedPoll = std::chrono::microseconds(200);
  RankTransport& transport = *options_.distribution->transport;
  try {
    RankMessage message;
    std::int64_t idle_since_ns = 0;     // once the workers are done: since the last message
    std::int64_t drained_since_ns = 0;  // when the workers were done (0: not yet)
    for (std::int64_t heard = 0; heard < messages_expected_ && !failed_;) {
      bool draining = false, wanted = true;
      {
        // Unwanted, it still polls now and then while this rank's posted messages are on their
        // way, so that they move on (a large one waits for its receiver to take it).
        std::unique_lock<std::mutex> lock(listen_mutex_);
        const auto woken = [&] { return failed_ || listen_wanted_ > 0 || workers_done_; };
        if (transport.posting()) {
          wanted = listen_wake_.wait_for(lock, kPostedPoll, woken);
        } else {
          listen_wake_.wait(lock, woken);
        }
        draining = workers_done_;
      }
      if (draining && !drained_since_ns) drained_since_ns = idle_since_ns = now_ns();
      if (failed_) break;
      if (!transport.receive(message, wanted ? 0.002 : 0.0)) {
        if (draining && static_cast<double>(now_ns() - idle_since_ns) * 1e-9 > options_.distribution->message_timeout_s) {
          throw Error("every task of rank " + std::to_string(rank_) + " has ended, but " +
                      std::to_string(messages_expected_ - heard) + " messages from other ranks never came");
        }
        continue;
      }
      idle_since_ns = now_ns();
      ++heard;
      heard_from_ns_[static_cast<std::size_t>(message.from_rank)] = now_ns();
      if (message.task < 0 || message.task >= static_cast<std::int32_t>(g_.tasks.size())) {
        throw Error("a message from rank " + std::to_string(message.from_rank) +
                    " names task " + std::to_string(message.task) + ", which the graph does not have (do all ranks build the same graph?)");
      }
      const Task& t = task(message.task);
      keep_arrived(t, message);
      mark_done(t.id);
    }
  } catch (...) {
    fail(std::current_exception());
  }
}

template <typename B>
bool GraphExecution<B>::pin_to(std::int32_t processor) {
  if (options_.pin_cpus.empty() || processor < 0) return true;
  try {
    pin_this_thread(pinned_cpu(options_.pin_cpus, processor));
    return true;
  } catch (...) {
    fail(std::current_exception());
    return false;
  }
}

template <typename B>
void GraphExecution<B>::want_listener(int change) {
  std::lock_guard<std::mutex> lock(listen_mutex_);
  listen_wanted_ += change;
  if (listen_wanted_ > 0) listen_wake_.notify_one();
}

template <typename B>
void GraphExecution<B>::send_to_rank(std::int32_t rank, std::int32_t task_id, std::vector<unsigned char> bytes) {
  options_.distribution->transport->post(rank, task_id, std::move(bytes));  // the listener moves it on
}

// A transfer's output as bytes: each field's count, then its tensors (the backend packs each).
template <typename B>
void GraphExecution<B>::pack_payload(ByteWriter& w, const Payload& p) const {
  if constexpr (!PacksTensors<B>::value) {
    static_cast<void>(w), static_cast<void>(p);
    throw Error("the " + name_ + " executor cannot run across processes yet");
  } else {
    b_.pack(w, p.activation.main);
    b_.pack(w, p.activation.shortcut);
    b_.pack(w, p.input_gradient.main);
    b_.pack(w, p.input_gradient.shortcut);
    w.value(static_cast<std::int64_t>(p.input_gradient.first_sample));
    w.value(static_cast<std::int64_t>(p.output_gradients.size()));
    for (const auto& g : p.output_gradients) {
      b_.pack(w, g.main);
      b_.pack(w, g.shortcut);
      w.value(static_cast<std::int64_t>(g.first_sample));
    }
    w.value(static_cast<std::int64_t>(p.weights.size()));
    for (const auto& x : p.weights) b_.pack(w, *x);
    w.value(static_cast<std::int64_t>(p.weight_gradients.size()));
    for (const auto& g : p.weight_gradients) b_.pack(w, g);
    w.value(static_cast<std::int64_t>(p.stash.size()));
    for (const auto& layer : p.stash) b_.pack(w, layer);
  }
}

template <typename B>
std::unique_ptr<typename GraphExecution<B>::Payload> GraphExecution<B>::unpack_payload(const RankMessage& message,
                                                                                    std::int32_t to) const {
  auto p = std::make_unique<Payload>();
  if constexpr (!PacksTensors<B>::value) {
    static_cast<void>(message), static_cast<void>(to);
    throw Error("the " + name_ + " executor cannot run across processes yet");
  } else {
    ByteReader r(message);
    const auto count = [&r] {
      const auto k = r.value<std::int64_t>();
      if (k < 0 || k > (std::int64_t{1} << 24)) throw Error("a message between ranks is malformed: a list of " + std::to_string(k));
      return static_cast<std::size_t>(k);
    };
    b_.unpack(r, p->activation.main, to);
    b_.unpack(r, p->activation.shortcut, to);
    b_.unpack(r, p->input_gradient.main, to);
    b_.unpack(r, p->input_gradient.shortcut, to);
    p->input_gradient.first_sample = r.value<std::int64_t>();
    p->output_gradients.resize(count());
    for (auto& g : p->output_gradients) {
      b_.unpack(r, g.main, to);
      b_.unpack(r, g.shortcut, to);
      g.first_sample = r.value<std::int64_t>();
    }
    p->weights.resize(count());
    for (auto& x : p->weights) {
      Params w;
      b_.unpack(r, w, to);
      x = std::make_shared<const Params>(std::move(w));
    }
    p->weight_gradients.resize(count());
    for (auto& g : p->weight_gradients) b_.unpack(r, g, to);
    p->stash.resize(count());
    for (auto& layer : p->stash) b_.unpack(r, layer, to);
    if (!r.done()) throw Error("a message between ranks is malformed: bytes left over");
  }
  return p;
}

// Rank 0 gathers every rank's events, loss sums and the newest weights of its layers, and makes
// the run's TrainingRun from them as from one process's; the other ranks' runs hold no result.
template <typename B>
void GraphExecution<B>::gather_run(TrainingRun& run) {
  RankTransport& transport = *options_.distribution->transport;
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  ByteWriter mine;
  event_log_->pack(mine);
  mine.values(loss_sum_.data(), static_cast<std::int64_t>(loss_sum_.size()));
  std::vector<std::int32_t> own_layers;  // the layers whose stage runs here
  for (std::size_t l = 0; l < net_.size(); ++l) {
    const std::int32_t home = g_.stages[static_cast<std::size_t>(stage_of_layer_[l])].processor;
    if (rank_of_processor(home, processors, transport.ranks()) == rank_) own_layers.push_back(static_cast<std::int32_t>(l));
  }
  mine.values(own_layers.data(), static_cast<std::int64_t>(own_layers.size()));
  for (const auto l : own_layers) {
    const HostWeights w = b_.download(*weights(l, flow_.newest_version[static_cast<std::size_t>(l)], g_.tasks.front()));
    mine.values(w.data(), w.size());
  }
  // A rank that stopped after its last task is found at the gather's barrier, within the timeout.
  const auto all = transport.gather_within(mine.bytes(), options_.distribution->message_timeout_s);
  run.layer_times = layer_log_.take();
  if (rank_ != 0) return;
  std::vector<std::unique_ptr<ByteReader>> readers;
  std::vector<ByteReader*> logs;
  for (const auto& bytes : all) {
    readers.push_back(std::make_unique<ByteReader>(bytes));
    logs.push_back(readers.back().get());
  }
  SummaryObserver merged(g_);
  std::vector<EngineObserver*> told{&merged};
  RankEventLog::replay(logs, told);
  run.result = merged.result(name_, options_.record_memory_timeline);
  run.result.out_of_memory.clear();
  std::vector<double> loss(loss_sum_.size(), 0.0);
  run.final_weights.assign(net_.size(), HostWeights());
  for (auto* r : logs) {
    std::vector<double> part(static_cast<std::size_t>(r->count<double>()));
    if (part.size() != loss.size()) throw Error("a message between ranks is malformed: loss sums of another length");
    r->values(part.data(), static_cast<std::int64_t>(part.size()));
    for (std::size_t k = 0; k < loss.size(); ++k) loss[k] += part[k];  // one rank has the loss layer; the others add 0
    std::vector<std::int32_t> layers(static_cast<std::size_t>(r->count<std::int32_t>()));
    r->values(layers.data(), static_cast<std::int64_t>(layers.size()));
    for (const auto l : layers) {
      if (l < 0 || l >= static_cast<std::int32_t>(net_.size())) throw Error("a message between ranks is malformed: layer " + std::to_string(l));
      HostWeights w(r->count<float>());
      r->values(w.data(), w.size());
      run.final_weights[static_cast<std::size_t>(l)] = std::move(w);
    }
  }
  for (const double sum : loss) run.minibatch_loss.push_back(sum / static_cast<double>(net_.batch * flow_.replicas));
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
