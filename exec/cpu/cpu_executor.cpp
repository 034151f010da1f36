// The CPU executor: the shared graph execution (exec/common/graph_execution.hpp) with layers in
// Eigen (fp32) on host threads. Shared memory stands in for each processor's memory: a transfer
// is a copy into a new buffer, accounted to the processor (or host memory) at its far end. Each
// processor's lane has a TensorPool: the tensors its layers make take their buffers from it and
// give them back when they die (a copy takes its buffer from its original's pool), so that after
// the first steps a step allocates no tensor memory.
#include "pipetwin/exec/cpu/cpu_executor.hpp"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "../common/graph_execution.hpp"
#include "../common/thread_plan.hpp"
#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {
namespace {

// The Backend of GraphExecution (see there) for Eigen on host threads.
class CpuBackend {
 public:
  using Params = Vector;
  using Tensor = PooledMatrix;
  using Activation = cpu::Activation;
  using Gradient = cpu::Gradient;
  using LayerStash = cpu::LayerStash;
  using Linear = cpu::Linear;
  using Labels = std::vector<std::int32_t>;
  struct Lane {
    std::shared_ptr<TensorPool> pool;  // a processor's; none on a link's lane (its copies take their originals')
  };
  // The layers add their weight gradients into `grad` where it holds a sum, and write them into
  // gradient_buffer's room (uninitialised) where they begin one: a backward adds straight into
  // its update's sum (graph_execution.hpp), and no buffer is zeroed.
  static constexpr bool adds_into_gradients = true;
  // A reader takes over what a transfer copied to its processor (graph_execution.hpp): at P = 2
  // on resnet8 the second copy of a 2 MiB activation or gradient cost 100-130 us per task.
  static constexpr bool takes_over_arrivals = true;

  CpuBackend(const Network& network, const BatchSampler& data) : ops_(make_layer_ops(network.layers)), data_(data) {}

  // Called before the threads start, one processor at a time.
  Lane& processor_lane(std::int32_t p) {
    Lane& lane = processor_lanes_[p];
    if (!lane.pool) lane.pool = std::make_shared<TensorPool>();
    return lane;
  }
  Lane& link_lane(std::int32_t) { return link_lane_; }
  void enter(Lane&) {}
  void finish(Lane&) {}
  using LayerMark = std::chrono::steady_clock::time_point;
  static LayerMark mark_layer(Lane&) { return std::chrono::steady_clock::now(); }
  static double seconds_between(Lane&, const LayerMark& from, const LayerMark& to) {
    return std::chrono::duration<double>(to - from).count();
  }
  static void forget_layer_marks(Lane&) {}

  void load(Lane& lane, std::int32_t minibatch, std::int32_t microbatch, Activation* samples, Labels* labels) const {
    if (samples != nullptr && lane.pool) {  // the sampler writes every float of it
      samples->main = Tensor(lane.pool->take(ops_.front().spec().in_features(), data_.samples_per_microbatch()), lane.pool);
    }
    data_.fill(minibatch, microbatch, samples != nullptr ? &samples->main : nullptr, labels);
  }
  static std::int64_t samples_of(const Activation& a) { return a.main.cols(); }

  // A block's input goes from the layer that takes it to the next one, which adds it, as one
  // buffer where both run in one task (graph_execution.hpp): the CPU's tensors are values, so a
  // shortcut sent on beside the stash's input was a copy (2 MiB per microbatch at resnet8's first
  // stage).
  static constexpr bool lends_block_inputs = true;
  Activation forward(Lane& lane, std::int32_t l, const Params& w, Activation in, LayerStash& stash,
                     const Labels* labels, double loss_scale, double* loss, exec::ShortcutHandoff handoff) const {
    return op(l).forward(w, std::move(in), stash, labels, loss_scale, loss, handoff, lane.pool);
  }
  Linear to_linear(Lane& lane, std::int32_t l, const Params& w, const LayerStash& stash, const Gradient* out,
                   bool want_shortcut, Params* grad, bool add) const {
    return op(l).to_linear(w, stash, out, want_shortcut, grad, mode(add), lane.pool);
  }
  Gradient input_gradient(Lane& lane, std::int32_t l, const Params& w, const Linear& linear, const Gradient* out,
                          std::int64_t begin, std::int64_t end) const {
    return op(l).input_gradient(w, linear, out, begin, end, lane.pool);
  }
  Params gradient_buffer(Lane&, std::int32_t l) const { return op(l).gradient_buffer(WeightGradient::write); }
  void weight_gradient(Lane&, std::int32_t l, const LayerStash& stash, const Linear& linear, Params& grad,
                       bool add) const {
    op(l).weight_gradient(stash, linear, grad, mode(add));
  }
  static Gradient assemble(Lane& lane, const std::vector<const Gradient*>& slices, std::int64_t n) {
    Gradient whole;
    whole.main = zeros(lane, slices.front()->main.rows(), n);
    if (slices.front()->shortcut.size() > 0) whole.shortcut = zeros(lane, slices.front()->shortcut.rows(), n);
    for (const Gradient* slice : slices) {
      whole.main.middleCols(slice->first_sample, slice->main.cols()) = slice->main;
      if (slice->shortcut.size() > 0) whole.shortcut.middleCols(slice->first_sample, slice->shortcut.cols()) = slice->shortcut;
    }
    return whole;
  }
  static void accumulate(Lane&, Params& sum, const Params& g) { sum += g; }
  // The new weights are written over the sum, which the update gives up: an update allocates no
  // memory (a fresh 785 KiB version per step had glibc's heap grow for mlp's first seven updates,
  // each 4-20x its later time in page faults).
  static Params sgd(Lane&, const Params& w, Params&& g, Params* velocity, double learning_rate, double momentum) {
    const float rate = static_cast<float>(learning_rate);
    if (velocity == nullptr) {
      g = w - rate * g;  // coefficient-wise: no aliasing
    } else {
      *velocity = static_cast<float>(momentum) * *velocity + g;
      g = w - rate * *velocity;
    }
    return std::move(g);
  }

  static Params upload(const Vector& host, std::int32_t) { return host; }
  static Params zeros(std::int64_t count, std::int32_t) { return Vector::Zero(count); }
  static Vector download(const Params& p) { return p; }
  template <typename T>
  static T copy(Lane&, const T& x, std::int32_t) { return x; }
  static Params clone(Lane&, const Params& x) { return x; }
  // An all-reduce step's traffic: its bytes written into a buffer and copied into another (the
  // processors' threads share memory; the sum itself is taken once, at the update).
  static void move_bytes(Lane&, std::int64_t bytes, std::int32_t) {
    if (bytes <= 0) return;
    std::vector<unsigned char> from(static_cast<std::size_t>(bytes), 1), to(static_cast<std::size_t>(bytes));
    std::memcpy(to.data(), from.data(), from.size());
    volatile unsigned char sink = to[to.size() / 2];  // the copy is observed: not optimised away
    static_cast<void>(sink);
  }
  // A tensor in a message to another rank: rows, columns, whether its floats travel beside the
  // message (a transport that carries spans, as NCCL does GPU memory), then its floats
  // (column-major) unless they do.
  static void pack(exec::ByteWriter& w, const Matrix& m) { pack_floats(w, m.rows(), m.cols(), m.data()); }
  static void unpack(exec::ByteReader& r, Matrix& m, std::int32_t = 0) {  // one memory: `to` is moot
    const exec::TensorHeader header = r.tensor_header();
    m.resize(header.rows, header.cols);
    unpack_floats(r, header, m.data());
  }
  static void pack(exec::ByteWriter& w, const Vector& v) { pack_floats(w, v.size(), 1, v.data()); }
  static void unpack(exec::ByteReader& r, Vector& v, std::int32_t = 0) {
    const exec::TensorHeader header = r.tensor_header();
    if (header.cols != 1) throw Error("a message between ranks is malformed: a vector's shape");
    v.resize(header.rows);
    unpack_floats(r, header, v.data());
  }
  // A forward's stash of one layer, for a backward on another rank's processor.
  static void pack(exec::ByteWriter& w, const LayerStash& s) {
    pack(w, s.input);
    pack(w, s.activation);
    pack(w, s.batch_norm.normalized);
    pack(w, s.batch_norm.inv_std);
    w.values(s.argmax.data(), static_cast<std::int64_t>(s.argmax.size()));
    pack(w, s.loss_gradient);
  }
  static void unpack(exec::ByteReader& r, LayerStash& s, std::int32_t = 0) {
    unpack(r, s.input);
    unpack(r, s.activation);
    unpack(r, s.batch_norm.normalized);
    unpack(r, s.batch_norm.inv_std);
    s.argmax.resize(static_cast<std::size_t>(r.count<std::int32_t>()));
    r.values(s.argmax.data(), static_cast<std::int64_t>(s.argmax.size()));
    unpack(r, s.loss_gradient);
  }
  template <typename T>
  static std::int64_t bytes(const T& x) { return bytes_of(x); }

  // The processors' tensor pools' counts, together.
  TensorPool::Counts tensor_pool_counts() const {
    TensorPool::Counts total;
    for (const auto& [p, lane] : processor_lanes_) {
      const TensorPool::Counts counts = lane.pool->counts();
      total.reused += counts.reused;
      total.made += counts.made;
      total.kept += counts.kept;
      total.freed += counts.freed;
      total.held_bytes += counts.held_bytes;
    }
    return total;
  }

 private:
  static void pack_floats(exec::ByteWriter& w, std::int64_t rows, std::int64_t cols, const float* data) {
    const exec::TensorHeader header = w.tensor_header(rows, cols, true);
    if (header.count() == 0) return;
    if (header.beside) {
      w.out_of_band(data, header.count() * static_cast<std::int64_t>(sizeof(float)));
    } else {
      w.values(data, header.count());
    }
  }
  // After its header: a tensor's floats, from the message or from beside it.
  static void unpack_floats(exec::ByteReader& r, const exec::TensorHeader& header, float* into) {
    if (header.count() == 0) return;
    if (header.beside) {
      r.out_of_band(into, header.count() * static_cast<std::int64_t>(sizeof(float)));
      return;
    }
    if (r.count<float>() != header.count()) throw Error("a message between ranks is malformed: a tensor's size");
    r.values(into, header.count());
  }
  const LayerOp& op(std::int32_t l) const { return ops_[static_cast<std::size_t>(l)]; }
  static Tensor zeros(const Lane& lane, std::int64_t rows, std::int64_t cols) {  // [rows x cols] of zeros
    Tensor z(lane.pool ? lane.pool->take(rows, cols) : Matrix(rows, cols), lane.pool);
    z.setZero();
    return z;
  }
  static WeightGradient mode(bool add) { return add ? WeightGradient::add : WeightGradient::write; }
  std::vector<LayerOp> ops_;
  const BatchSampler& data_;
  std::map<std::int32_t, Lane> processor_lanes_;
  Lane link_lane_;
};

}  // namespace

TransferThreads transfer_threads_for(const TaskGraph& graph, TransferThreads asked) {
  if (asked != TransferThreads::automatic) return asked;
  // The count a CPU calibration records as its cores, so that the cost model and
  // the run agree on which graphs have their copies made by senders.
  return graph.processor_count() >= usable_cpu_count() ? TransferThreads::senders : TransferThreads::links;
}

double handoff_spin_of_run(const TaskGraph& graph, const TrainingOptions& options) {
  const bool distributed = options.distribution != nullptr;
  const bool senders = transfer_threads_for(graph, options.transfer_threads) == TransferThreads::senders;
  const bool link_threads = exec::plan_threads(graph, senders && !distributed).runs_link_threads(graph);
  return handoff_spin_for(graph.processor_count(), options.handoff_spin_s, distributed || link_threads);
}

TrainingRun run_cpu(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                    const TrainingOptions& options) {
  check_run_inputs(graph, network, data);
  check_training_options(options);
  TrainingOptions resolved = options;
  resolved.transfer_threads = transfer_threads_for(graph, options.transfer_threads);
  resolved.handoff_spin_s = handoff_spin_of_run(graph, options);
  CpuBackend backend(network, data);
  exec::GraphExecution<CpuBackend> execution(backend, graph, network, resolved, "cpu");
  TrainingRun run = execution.run();
  const TensorPool::Counts counts = backend.tensor_pool_counts();
  run.host_tensors_reused = counts.reused;
  run.host_tensors_allocated = counts.made;
  return run;
}

}  // namespace pipetwin::cpu
