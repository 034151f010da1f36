// The CUDA executor: the shared graph execution (exec/common/graph_execution.hpp) with a backend
// whose tensors live in GPU memory (or pinned host memory once offloaded) and whose layers run on
// each lane's stream. A processor lane's "copy" of a tensor it already holds shares the block
// (tensors a task receives are never written); a link lane's copy always lands in a new buffer at
// the far end, as the schedule's transfer declares.
#include "pipetwin/exec/cuda/cuda_executor.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "../common/graph_execution.hpp"
#include "cuda_check.hpp"
#include "lanes.hpp"
#include "nccl_transport.hpp"
#include "layer_kernels.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cuda {
namespace {

// Whether host threads block (sleep) while their streams work (CudaOptions::wait).
bool blocking_wait(const CudaOptions& options) {
  if (options.wait != "spin" && options.wait != "block") {
    throw Error("--gpu-wait must be spin or block, got '" + options.wait + "'");
  }
  return options.wait == "block";
}

class CudaBackend {
 public:
  using Tensor = cuda::Tensor;
  using Params = cuda::Tensor;  // [count x 1]
  using Activation = cuda::Activation;
  using Gradient = cuda::Gradient;
  using LayerStash = cuda::LayerStash;
  using Linear = LayerComposition::Linear;
  using Labels = cuda::Tensor;  // ints [n]
  using Lane = cuda::Lane;
  // A backward adds its weight gradients straight into its update's sum (the GEMMs' beta = 1), as
  // the CPU backend does (graph_execution.hpp), instead of writing them apart for a pass that adds
  // them: on an H200 16-SM partition that pass (56 add kernels) cost resnet56's backward
  // 120-190 us of its 17 ms at every microbatch but the first (docs/cuda-executor.md, 2026-12-01).
  static constexpr bool adds_into_gradients = true;

  CudaBackend(const TaskGraph& graph, const Network& network, const BatchSampler& data, const CudaOptions& options,
              const TrainingOptions& training)
      : data_(data), pool_(LaneSet::caches_needed(graph) + 1), receive_cache_(LaneSet::caches_needed(graph)),
        lanes_(graph, placement_options(graph, options, training), pool_) {
    for (auto& spec : exec::make_layer_specs(network.layers)) ops_.emplace_back(std::move(spec));
  }

  const std::string& description() const { return lanes_.description(); }
  // Per GPU (pinned host memory left out), the most bytes the pool held at once.
  std::map<int, std::int64_t> device_pool_peak_bytes() const {
    std::map<int, std::int64_t> peaks = pool_.peak_reserved_bytes();
    peaks.erase(-1);
    return peaks;
  }
  Lane& processor_lane(std::int32_t p) { return lanes_.processor(p); }
  Lane& link_lane(std::int32_t k) { return lanes_.link(k); }
  void enter(Lane& lane) { lanes_.enter(lane); }
  static void finish(Lane& lane) { lane.context->synchronize(); }
  // A layer's time: between two events in the lane's stream, read once the stream has drained, so
  // that timing adds no wait between layers.
  using LayerMark = std::size_t;  // an index into the lane's timing events
  static LayerMark mark_layer(Lane& lane) {
    if (lane.timing_events_used == lane.timing_events.size()) {
      cudaEvent_t event = nullptr;
      check_cuda(cudaEventCreate(&event), "cudaEventCreate");
      lane.timing_events.push_back(event);
    }
    check_cuda(cudaEventRecord(timing_event(lane, lane.timing_events_used), lane.context->impl().stream), "cudaEventRecord");
    return lane.timing_events_used++;
  }
  static double seconds_between(Lane& lane, LayerMark from, LayerMark to) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, timing_event(lane, from), timing_event(lane, to)), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }
  static void forget_layer_marks(Lane& lane) { lane.timing_events_used = 0; }

  void load(Lane& lane, std::int32_t minibatch, std::int32_t microbatch, Activation* samples, Labels* labels) const {
    Eigen::MatrixXf x;
    std::vector<std::int32_t> host_labels;
    data_.fill(minibatch, microbatch, samples != nullptr ? &x : nullptr, labels != nullptr ? &host_labels : nullptr);
    const cudaStream_t stream = lane.context->impl().stream;
    if (labels != nullptr) {
      *labels = lane.tensor(static_cast<std::int64_t>(host_labels.size()), 1);
      check_cuda(cudaMemcpyAsync(labels->data(), host_labels.data(), host_labels.size() * 4, cudaMemcpyHostToDevice, stream),
                 "labels upload");
    }
    if (samples != nullptr) {
      samples->main = lane.tensor(x.rows(), x.cols());
      check_cuda(cudaMemcpyAsync(samples->main.data(), x.data(), static_cast<std::size_t>(x.size()) * 4,
                                 cudaMemcpyHostToDevice, stream),
                 "samples upload");
    }
    finish(lane);  // the host buffers go out of scope
  }
  static std::int64_t samples_of(const Activation& a) { return a.main.cols; }

  Activation forward(Lane& lane, std::int32_t l, const Params& w, Activation in, LayerStash& stash,
                     const Labels* labels, double loss_scale, double* loss) const {
    CudaLayerKernels kernels{lane};
    return op(l).forward(kernels, w, std::move(in), stash, labels, loss_scale, loss);
  }
  Linear to_linear(Lane& lane, std::int32_t l, const Params& w, const LayerStash& stash, const Gradient* out,
                   bool want_shortcut, Params* grad, bool add) const {
    CudaLayerKernels kernels{lane, add};
    return op(l).to_linear(kernels, w, stash, out, want_shortcut, grad);
  }
  Gradient input_gradient(Lane& lane, std::int32_t l, const Params& w, const Linear& linear, const Gradient* out,
                          std::int64_t begin, std::int64_t end) const {
    CudaLayerKernels kernels{lane};
    return op(l).input_gradient(kernels, w, linear, out, begin, end);
  }
  Params gradient_buffer(Lane& lane, std::int32_t l) const {
    CudaLayerKernels kernels{lane};
    return op(l).gradient_buffer(kernels);
  }
  void weight_gradient(Lane& lane, std::int32_t l, const LayerStash& stash, const Linear& linear, Params& grad,
                       bool add) const {
    CudaLayerKernels kernels{lane, add};
    op(l).weight_gradient(kernels, stash, linear, grad);
  }
  static Gradient assemble(Lane& lane, const std::vector<const Gradient*>& slices, std::int64_t n) {
    if (slices.size() == 1 && slices.front()->first_sample == 0 && slices.front()->main.cols == n) return *slices.front();
    const cudaStream_t stream = lane.context->impl().stream;
    Gradient whole;
    whole.main = zeroed(lane, slices.front()->main.rows, n);
    if (!slices.front()->shortcut.empty()) whole.shortcut = zeroed(lane, slices.front()->shortcut.rows, n);
    for (const Gradient* slice : slices) {
      place(whole.main.columns(slice->first_sample, slice->main.cols), slice->main, stream);
      if (!slice->shortcut.empty()) place(whole.shortcut.columns(slice->first_sample, slice->shortcut.cols), slice->shortcut, stream);
    }
    return whole;
  }
  static void accumulate(Lane& lane, Params& sum, const Params& g) { add_into(*lane.context, g.data(), sum.data(), g.size()); }
  static Params sgd(Lane& lane, const Params& w, const Params& g, Params* velocity, double learning_rate, double momentum) {
    Params next = lane.tensor(w.rows, w.cols);
    sgd_update(*lane.context, w.data(), g.data(), velocity == nullptr ? nullptr : velocity->data(), next.data(), w.size(),
               static_cast<float>(learning_rate), velocity == nullptr ? 0.0f : static_cast<float>(momentum));
    return next;
  }

  // Initial weights and momentum, from the main thread before the lanes' threads start.
  Params upload(const HostWeights& host, std::int32_t p) {
    Lane& home = lanes_.processor(p);
    Params t = home.tensor(host.size(), 1);
    check_cuda(cudaMemcpy(t.data(), host.data(), static_cast<std::size_t>(host.size()) * 4, cudaMemcpyHostToDevice), "weights upload");
    return t;
  }
  Params zeros(std::int64_t count, std::int32_t p) { return upload(HostWeights::Zero(count), p); }
  static HostWeights download(const Params& p) {
    HostWeights host(p.size());
    check_cuda(cudaMemcpy(host.data(), p.data(), static_cast<std::size_t>(p.bytes()), cudaMemcpyDefault), "weights download");
    return host;
  }

  Tensor copy(Lane& lane, const Tensor& x, std::int32_t to) const {
    if (x.empty() || (!lane.link && x.where == to)) return x;
    Tensor y = lane.tensor(x.rows, x.cols, to, to == kHost ? -1 : lanes_.device_of(to));
    place(y, x, lane.context->impl().stream);
    return y;
  }
  Activation copy(Lane& lane, const Activation& a, std::int32_t to) const { return {copy(lane, a.main, to), copy(lane, a.shortcut, to)}; }
  Gradient copy(Lane& lane, const Gradient& g, std::int32_t to) const {
    return {copy(lane, g.main, to), copy(lane, g.shortcut, to), g.first_sample};
  }
  LayerStash copy(Lane& lane, const LayerStash& s, std::int32_t to) const {
    LayerStash moved = s;
    for (Tensor* t : tensors_of(moved)) {
      *t = copy(lane, *t, to);
    }
    return moved;
  }
  // A weight gradient the update sums into: its own buffer.
  static Params clone(Lane& lane, const Params& g) {
    Params mine = lane.tensor(g.rows, g.cols);
    place(mine, g, lane.context->impl().stream);
    return mine;
  }
  // Across ranks (ranks.hpp): a tensor's shape, then its floats, copied into the message through
  // the host; or, where the transport moves GPU memory itself (NCCL), named for it to send beside
  // the message. The copies are synchronous: the data was finished on its lane before.
  void pack(exec::ByteWriter& w, const Tensor& x) const {
    const exec::TensorHeader header = w.tensor_header(x.rows, x.cols, x.where != kHost);
    if (x.empty()) return;
    if (header.beside) {
      w.out_of_band(x.data(), x.bytes());
    } else {
      float* into = w.values_to_fill<float>(x.size());
      check_cuda(cudaMemcpy(into, x.data(), static_cast<std::size_t>(x.bytes()), cudaMemcpyDefault), "copy into a message");
    }
  }
  // On processor `to`'s GPU, from the listener thread (a cache of its own in the pool).
  void unpack(exec::ByteReader& r, Tensor& x, std::int32_t to) const {
    const exec::TensorHeader header = r.tensor_header();
    x = Tensor();
    x.rows = header.rows;
    x.cols = header.cols;
    x.where = to;
    if (x.empty()) return;
    if (to < 0) throw Error("internal: a tensor from another rank has no processor to go to");
    const int device = lanes_.device_of(to);
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    x.block = pool_.allocate(receive_cache_, device, x.bytes(), "a [" + std::to_string(x.rows) + " x " + std::to_string(x.cols) + "] tensor from another rank");
    if (header.beside) {
      r.out_of_band(x.data(), x.bytes());
      return;
    }
    if (r.count<float>() != x.size()) throw Error("a message between ranks is malformed: a tensor's size");
    const unsigned char* from = r.view(static_cast<std::size_t>(x.bytes()));
    check_cuda(cudaMemcpy(x.data(), from, static_cast<std::size_t>(x.bytes()), cudaMemcpyHostToDevice), "copy from a message");
  }
  void pack(exec::ByteWriter& w, const LayerStash& s) const {
    for (const Tensor* t : tensors_of(s)) {
      pack(w, *t);
    }
  }
  void unpack(exec::ByteReader& r, LayerStash& s, std::int32_t to) const {
    for (Tensor* t : tensors_of(s)) {
      unpack(r, *t, to);
    }
  }
  template <typename T>
  static std::int64_t bytes(const T& x) { return bytes_of(x); }
  // All-reduce steps: run_cuda refuses graphs with collectives before anything runs.
  static void move_bytes(Lane&, std::int64_t, std::int32_t) {
    throw Error("the CUDA executor does not run collectives yet");
  }

 private:
  // A stash's tensors, in one order for its copies and its messages.
  static std::array<Tensor*, 6> tensors_of(LayerStash& s) {
    return {&s.input, &s.activation, &s.batch_norm.normalized, &s.batch_norm.inv_std, &s.argmax, &s.loss_gradient};
  }
  static std::array<const Tensor*, 6> tensors_of(const LayerStash& s) {
    return {&s.input, &s.activation, &s.batch_norm.normalized, &s.batch_norm.inv_std, &s.argmax, &s.loss_gradient};
  }
  const LayerComposition& op(std::int32_t l) const { return ops_[static_cast<std::size_t>(l)]; }
  static cudaEvent_t timing_event(Lane& lane, std::size_t i) { return static_cast<cudaEvent_t>(lane.timing_events.at(i)); }
  static void place(const Tensor& to, const Tensor& from, cudaStream_t stream) {
    check_cuda(cudaMemcpyAsync(to.data(), from.data(), static_cast<std::size_t>(from.bytes()), cudaMemcpyDefault, stream), "copy");
  }
  static Tensor zeroed(Lane& lane, std::int64_t rows, std::int64_t cols) {
    Tensor t = lane.tensor(rows, cols);
    check_cuda(cudaMemsetAsync(t.data(), 0, static_cast<std::size_t>(t.bytes()), lane.context->impl().stream), "memset");
    return t;
  }

  // A profile's copy k of n at once takes partitions k P .. k P + P - 1 of n P.
  static PlacementOptions placement_options(const TaskGraph& graph, const CudaOptions& options, const TrainingOptions& training) {
    const auto P = static_cast<int>(graph.processors.size());
    return PlacementOptions{options.placement, options.device, options.partition_sms, options.tf32,
                            blocking_wait(options), P * training.copies, P * training.copy};
  }

  const BatchSampler& data_;
  mutable MemoryPool pool_;  // before the lanes and every tensor: destroyed last
  int receive_cache_;        // the pool's cache for tensors that arrive from other ranks
  LaneSet lanes_;
  std::vector<LayerComposition> ops_;
};

// Bytes per second of a large device-to-device copy on one stream, and the seconds a one-float
// copy takes from issue to the host seeing it done (median of `repeats`).
void measure_copies(const CudaOptions& options, int repeats, double* bytes_per_s, double* latency_s) {
  check_cuda(cudaSetDevice(options.device), "cudaSetDevice");
  Context context(options.tf32);
  const cudaStream_t stream = context.impl().stream;
  const std::int64_t floats = 16 << 20;  // 64 MiB
  DeviceBuffer from(floats), to(floats);
  std::vector<double> copy_s, small_s;
  for (int r = 0; r <= repeats; ++r) {
    auto begin = std::chrono::steady_clock::now();
    check_cuda(cudaMemcpyAsync(to.data(), from.data(), floats * 4, cudaMemcpyDeviceToDevice, stream), "copy");
    context.synchronize();
    const double big = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    begin = std::chrono::steady_clock::now();
    check_cuda(cudaMemcpyAsync(to.data(), from.data(), 4, cudaMemcpyDeviceToDevice, stream), "copy");
    context.synchronize();
    const double small = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (r == 0) continue;  // warm-up
    copy_s.push_back(big);
    small_s.push_back(small);
  }
  *bytes_per_s = static_cast<double>(floats * 4) / median_of(std::move(copy_s));
  *latency_s = median_of(std::move(small_s));
}

// The GPU of rank `rank`'s processors. A rank runs its processors on one GPU (a rank's messages
// and NCCL communicator belong to one device): with --placement gpus, one processor per rank.
int rank_device(const TaskGraph& graph, const CudaOptions& options, std::int32_t rank, std::int32_t ranks) {
  if (options.placement != "gpus") return options.device;
  const auto processors = static_cast<std::int32_t>(graph.processors.size());
  std::vector<std::int32_t> mine;
  for (std::int32_t p = 0; p < processors; ++p) {
    if (rank_of_processor(p, processors, ranks) == rank) mine.push_back(p);
  }
  if (mine.size() != 1) {
    throw Error("--placement gpus across ranks runs one processor per rank (a rank's tensors live on one GPU), but rank " +
                std::to_string(rank) + " has " + std::to_string(mine.size()) + " of the " + std::to_string(processors) +
                " processors: launch as many ranks as processors (mpirun -np " + std::to_string(processors) + ")");
  }
  return mine.front();  // processor p runs on GPU p
}

}  // namespace

TrainingRun run_cuda(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                          const TrainingOptions& training, const CudaOptions& options, std::string* placement) {
  check_run_inputs(graph, network, data);
  if (!graph.collectives.empty()) {
    throw Error("the CUDA executor does not run collectives yet: dp=" + std::to_string(graph_replicas(graph)) +
                " trains on the CPU executor (--device cpu) or is predicted (simulate, evaluate)");
  }
  for (const auto& layer : network.layers) {
    if (layer.tensor_parallel > 1) {
      throw Error("the CUDA executor does not run tensor-parallel layers yet: tp= trains on the CPU executor "
                  "(--device cpu) or is predicted (simulate, evaluate)");
    }
  }
  check_training_options(training);
  // Across ranks, the tensors travel over NCCL or through host memory over the run's transport.
  TrainingOptions run_options = training;
  Distribution over_nccl;
  std::unique_ptr<RankTransport> nccl;
  std::string rank_link;
  if (training.distribution != nullptr) {
    RankTransport& transport = *training.distribution->transport;
    const int device = rank_device(graph, options, transport.rank(), transport.ranks());
    const RankLinkChoice choice = choose_rank_link(transport, device, options.rank_link);
    rank_link = ", tensors between ranks " + choice.why;
    if (choice.nccl) {
      nccl = make_nccl_transport(transport, device, training.distribution->message_timeout_s);
      over_nccl = *training.distribution;
      over_nccl.transport = nccl.get();
      run_options.distribution = &over_nccl;
    }
  }
  run_options.transfer_threads = TransferThreads::links;  // a link's copies go on its own stream
  if (run_options.handoff_spin_s == kAutomaticHandoffSpin) run_options.handoff_spin_s = 0;  // automatic: park
  CudaBackend backend(graph, network, data, options, run_options);
  if (placement != nullptr) *placement = backend.description() + rank_link;
  exec::GraphExecution<CudaBackend> execution(backend, graph, network, run_options, "cuda");
  TrainingRun run = execution.run();
  run.device_pool_peak_bytes = backend.device_pool_peak_bytes();
  return run;
}

Calibration profile_cuda(const GraphConfig& config, const Dataset& data, int repeats, std::uint64_t seed,
                         const CudaOptions& options, const std::function<void(const std::string&)>& progress,
                         int concurrent, ConcurrentTiming timing) {
  std::string placement;
  const Runner run_marked = [&](const TaskGraph& graph, const Network& network, const BatchSampler& sampler,
                                const TrainingOptions& training) {
    return run_cuda(graph, network, sampler, training, options, training.copy == 0 ? &placement : nullptr);
  };
  const bool twins = takes_unmarked_twins(options.unmarked_twins, /*on_gpu=*/true, concurrent);
  const Runner run = twins ? with_unmarked_twins(run_marked) : run_marked;
  std::optional<Calibration> in_pipeline;
  if (concurrent > 1 && timing == ConcurrentTiming::pipeline) {
    // run_cuda puts a link's copies on its own stream and parks waiting threads, whatever these say.
    in_pipeline = profile_layers_in_pipeline(config, data, repeats, seed, run, progress, concurrent, TrainingOptions{});
    if (!in_pipeline && progress) progress("timing " + std::to_string(concurrent) + " copies at once instead");
  }
  Calibration calibration = in_pipeline ? std::move(*in_pipeline) : profile_layers(config, data, repeats, seed, run, progress, concurrent);
  // The gaps between a stream's tasks (Calibration::task_gap_s) are validated on the CPU only: a
  // GPU table keeps its tasks' times alone until a GPU run compares them (docs/executor.md).
  calibration.task_gap_s = -1;
  if (progress) progress("measuring the GPU's copy bandwidth and latency");
  measure_copies(options, std::max(3, repeats), &calibration.copy_bytes_per_s, &calibration.copy_latency_s);
  // producer -> link thread -> consumer, each asleep for about a task. Kept apart too: the link
  // thread's wake-up is paid only when it waited, and the consumer's holds the link no longer
  // (LinkInfo::wake_cycles, delivery_cycles); the copy's round trip is what the executor waits for.
  calibration.handoff_s = measure_handoff_s(repeats, typical_task_s(calibration));
  calibration.copy_latency_s += 2 * calibration.handoff_s;
  calibration.device = "cuda";
  calibration.device_name = placement.empty() ? "CUDA" : placement;
  calibration.overheads_from_unmarked_twins = twins;
  return calibration;
}

}  // namespace pipetwin::cuda
