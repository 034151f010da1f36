// What a task's host synchronisation costs: a pipeline of P processors (the executor's own lanes:
// SM partitions through green contexts, or plain streams), M microbatches flowing through it, each
// task K short kernels of a fixed duration, task (p, m) after (p - 1, m) and after (p, m - 1). One
// iteration (every task once) is run three ways:
//   host    what the CUDA executor does: a thread per processor issues its task, synchronises its
//           stream, then tells the next processor's thread (a condition variable) that it ended
//   events  a thread per processor issues its task behind a cudaStreamWaitEvent on the previous
//           processor's event for that microbatch and records its own; no host waits until the end
//   graph   the whole iteration captured once as a CUDA graph (forked across the lanes' streams by
//           events) and launched; where capture across the lanes fails, the reason is printed
// and timed (median of R iterations after 2 warm-ups) against the GPU's own critical path,
// (M + P - 1) * K * kernel time. Prints one line per way; exits non-zero only on an error outside
// one way's run.
//
//   pipetwin_task_sync_benchmark [--placement partitions|streams] [--processors P] [--sms N]
//                                [--microbatches M] [--kernels K] [--kernel-us T] [--repeats R]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../exec/cuda/cuda_check.hpp"
#include "../../exec/cuda/device_memory.hpp"
#include "../../exec/cuda/lanes.hpp"

namespace {

using pipetwin::Error;
using pipetwin::cuda::check_cuda;

// One block that spins on the GPU's global timer for `ns` nanoseconds: a kernel of a known length
// whatever the partition's size, so that only the host's share of a task varies between the ways.
__global__ void spin_for(long long ns, int* sink) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
  if (threadIdx.x == 0 && sink != nullptr) *sink = static_cast<int>(now - start);
}

struct Shape {
  int processors = 4, microbatches = 8, kernels = 20, repeats = 10;
  double kernel_us = 10;
};

// Which tasks have ended (host) or been issued (events), per processor, for the threads to wait on.
class Progress {
 public:
  explicit Progress(int processors) : count_(static_cast<std::size_t>(processors), 0) {}
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::fill(count_.begin(), count_.end(), 0);
  }
  void advance(int p) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++count_[static_cast<std::size_t>(p)];
    }
    changed_.notify_all();
  }
  void wait_for(int p, int at_least) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return count_[static_cast<std::size_t>(p)] >= at_least; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> count_;
};

class Pipeline {
 public:
  Pipeline(const Shape& shape, const std::string& placement, int sms)
      : shape_(shape), graph_(graph_of(shape.processors)), pool_(pipetwin::cuda::LaneSet::caches_needed(graph_)),
        lanes_(graph_, options(placement, sms), pool_), progress_(shape.processors) {
    events_.resize(static_cast<std::size_t>(shape.processors));
    for (int p = 0; p < shape.processors; ++p) {
      pipetwin::cuda::Lane& lane = lanes_.processor(p);
      lanes_.enter(lane);
      streams_.push_back(lane.context->impl().stream);
      for (int m = 0; m < shape.microbatches; ++m) {
        cudaEvent_t event = nullptr;
        check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        events_[static_cast<std::size_t>(p)].push_back(event);
      }
    }
    lanes_.enter(lanes_.processor(0));
    check_cuda(cudaMalloc(&sink_, sizeof(int)), "cudaMalloc");
  }
  ~Pipeline() {
    for (auto& row : events_) {
      for (cudaEvent_t e : row) cudaEventDestroy(e);
    }
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    cudaFree(sink_);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const std::string& description() const { return lanes_.description(); }

  // Median seconds of one iteration run `way`.
  double time(const std::function<void()>& way) {
    std::vector<double> seconds;
    for (int r = 0; r < shape_.repeats + 2; ++r) {
      const auto start = std::chrono::steady_clock::now();
      way();
      if (r >= 2) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
  }

  void host_synchronised() {
    on_every_processor([&](int p) {
      for (int m = 0; m < shape_.microbatches; ++m) {
        if (p > 0) progress_.wait_for(p - 1, m + 1);  // (p - 1, m) has ended
        issue_task(p);
        check_cuda(cudaStreamSynchronize(streams_[static_cast<std::size_t>(p)]), "cudaStreamSynchronize");
        progress_.advance(p);
      }
    });
  }

  void event_chained() {
    on_every_processor([&](int p) {
      const cudaStream_t stream = streams_[static_cast<std::size_t>(p)];
      for (int m = 0; m < shape_.microbatches; ++m) {
        if (p > 0) {
          progress_.wait_for(p - 1, m + 1);  // (p - 1, m) is issued and its event recorded
          check_cuda(cudaStreamWaitEvent(stream, event(p - 1, m), 0), "cudaStreamWaitEvent");
        }
        issue_task(p);
        check_cuda(cudaEventRecord(event(p, m), stream), "cudaEventRecord");
        progress_.advance(p);
      }
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    });
  }

  // Captures the iteration once (from one thread, entering each lane's context before issuing on
  // its stream), then each call launches it and waits.
  void graph_launch() {
    if (graph_exec_ == nullptr) capture();
    check_cuda(cudaGraphLaunch(graph_exec_, streams_[0]), "cudaGraphLaunch");
    check_cuda(cudaStreamSynchronize(streams_[0]), "cudaStreamSynchronize");
  }

 private:
  static pipetwin::TaskGraph graph_of(int processors) {
    pipetwin::TaskGraph graph;
    graph.processors.resize(static_cast<std::size_t>(processors));
    return graph;
  }
  static pipetwin::cuda::PlacementOptions options(const std::string& placement, int sms) {
    pipetwin::cuda::PlacementOptions o;
    o.placement = placement;
    o.sms_per_partition = sms;
    return o;
  }
  cudaEvent_t event(int p, int m) const {
    return events_[static_cast<std::size_t>(p)][static_cast<std::size_t>(m)];
  }
  // Launches task p's kernels on its stream; the first launch error, or cudaSuccess.
  cudaError_t launch_task(int p) {
    const long long ns = static_cast<long long>(shape_.kernel_us * 1e3);
    for (int k = 0; k < shape_.kernels; ++k) {
      spin_for<<<1, 32, 0, streams_[static_cast<std::size_t>(p)]>>>(ns, sink_);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  void issue_task(int p) { check_cuda(launch_task(p), "spin_for"); }
  void on_every_processor(const std::function<void(int)>& body) {
    progress_.reset();
    std::vector<std::exception_ptr> failures(static_cast<std::size_t>(shape_.processors));
    std::vector<std::thread> threads;
    for (int p = 0; p < shape_.processors; ++p) {
      threads.emplace_back([&, p] {
        try {
          lanes_.enter(lanes_.processor(p));
          body(p);
        } catch (...) {
          failures[static_cast<std::size_t>(p)] = std::current_exception();
          // Let the threads waiting on this one go on (their work is wasted; the way has failed).
          for (int m = 0; m < shape_.microbatches; ++m) progress_.advance(p);
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& failure : failures) {
      if (failure) std::rethrow_exception(failure);
    }
  }
  void capture() {
    lanes_.enter(lanes_.processor(0));
    const cudaStream_t origin = streams_[0];
    cudaEvent_t fork = nullptr;
    check_cuda(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check_cuda(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaError_t failed = cudaSuccess;
    const char* where = "";
    auto step = [&](cudaError_t e, const char* what) {
      if (failed == cudaSuccess && e != cudaSuccess) {
        failed = e;
        where = what;
      }
    };
    step(cudaEventRecord(fork, origin), "cudaEventRecord (fork)");
    for (int p = 1; p < shape_.processors; ++p) {
      lanes_.enter(lanes_.processor(p));
      step(cudaStreamWaitEvent(streams_[static_cast<std::size_t>(p)], fork, 0), "cudaStreamWaitEvent (fork)");
    }
    for (int m = 0; m < shape_.microbatches && failed == cudaSuccess; ++m) {
      for (int p = 0; p < shape_.processors && failed == cudaSuccess; ++p) {
        lanes_.enter(lanes_.processor(p));
        const cudaStream_t stream = streams_[static_cast<std::size_t>(p)];
        if (p > 0) step(cudaStreamWaitEvent(stream, event(p - 1, m), 0), "cudaStreamWaitEvent");
        step(launch_task(p), "kernel launch");
        step(cudaEventRecord(event(p, m), stream), "cudaEventRecord");
      }
    }
    for (int p = 1; p < shape_.processors; ++p) {  // join: the origin waits for every lane's last task
      lanes_.enter(lanes_.processor(p));
      step(cudaStreamWaitEvent(origin, event(p, shape_.microbatches - 1), 0), "cudaStreamWaitEvent (join)");
    }
    lanes_.enter(lanes_.processor(0));
    cudaGraph_t graph = nullptr;
    step(cudaStreamEndCapture(origin, &graph), "cudaStreamEndCapture");
    cudaEventDestroy(fork);
    if (failed != cudaSuccess) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      cudaGetLastError();  // clear the (non-sticky) error so that the other ways can still run
      throw Error(std::string("capture failed at ") + where + ": " + cudaGetErrorString(failed));
    }
    check_cuda(cudaGraphInstantiate(&graph_exec_, graph, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graph);
  }

  Shape shape_;
  pipetwin::TaskGraph graph_;
  pipetwin::cuda::MemoryPool pool_;
  pipetwin::cuda::LaneSet lanes_;
  Progress progress_;
  std::vector<cudaStream_t> streams_;                  // [processors]
  std::vector<std::vector<cudaEvent_t>> events_;       // [processors][microbatches]
  cudaGraphExec_t graph_exec_ = nullptr;
  int* sink_ = nullptr;
};

int run(int argc, char** argv) {
  Shape shape;
  std::string placement = "partitions";
  int sms = 16;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("usage: pipetwin_task_sync_benchmark [--placement partitions|streams] [--processors P] [--sms N]\n"
                  "       [--microbatches M] [--kernels K] [--kernel-us T] [--repeats R]\n");
      return 0;
    }
    if (i + 1 >= argc) throw Error(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--placement") placement = value;
    else if (flag == "--processors") shape.processors = std::atoi(value.c_str());
    else if (flag == "--sms") sms = std::atoi(value.c_str());
    else if (flag == "--microbatches") shape.microbatches = std::atoi(value.c_str());
    else if (flag == "--kernels") shape.kernels = std::atoi(value.c_str());
    else if (flag == "--kernel-us") shape.kernel_us = std::atof(value.c_str());
    else if (flag == "--repeats") shape.repeats = std::atoi(value.c_str());
    else throw Error("unknown option " + flag + " (--help lists them)");
  }
  if (shape.processors < 1 || shape.microbatches < 1 || shape.kernels < 1 || shape.repeats < 1 || shape.kernel_us < 0) {
    throw Error("--processors, --microbatches, --kernels and --repeats must be at least 1, --kernel-us not negative");
  }
  std::string reason;
  if (!pipetwin::cuda::device_available(&reason)) throw Error("no CUDA device: " + reason);

  Pipeline pipeline(shape, placement, sms);
  const int tasks = shape.processors * shape.microbatches;
  const double critical_s = (shape.microbatches + shape.processors - 1) * shape.kernels * shape.kernel_us * 1e-6;
  std::printf("%s; %d microbatches, tasks of %d kernels of %.1f us: %d tasks, critical path %.3f ms\n",
              pipeline.description().c_str(), shape.microbatches, shape.kernels, shape.kernel_us, tasks, critical_s * 1e3);
  double host_s = 0;
  const std::vector<std::pair<std::string, std::function<void()>>> ways = {
      {"host", [&] { pipeline.host_synchronised(); }},
      {"events", [&] { pipeline.event_chained(); }},
      {"graph", [&] { pipeline.graph_launch(); }}};
  for (const auto& [name, way] : ways) {
    try {
      const double s = pipeline.time(way);
      if (name == "host") host_s = s;
      std::printf("  %-7s %9.3f ms per iteration  %+8.2f us per task over the critical path",
                  name.c_str(), s * 1e3, (s - critical_s) * 1e6 / tasks);
      if (name != "host" && host_s > 0) std::printf("  (%.2f us per task less than host)", (host_s - s) * 1e6 / tasks);
      std::printf("\n");
    } catch (const std::exception& e) {
      std::printf("  %-7s not run: %s\n", name.c_str(), e.what());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipetwin_task_sync_benchmark: %s\n", e.what());
    return 1;
  }
}
