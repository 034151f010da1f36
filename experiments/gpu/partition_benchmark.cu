// Do SM partitions isolate? A compute-bound kernel (chains of FMAs, no memory traffic) timed
//   1. on the whole GPU (a plain stream),
//   2. on one green-context partition of N SMs, alone,
//   3. on that partition while every other partition runs the same kernel at once,
// through the executor's own placement code (exec/cuda/lanes.cpp). If partitions isolate, (2) is
// about device_sms / N times (1), and (3) equals (2). Prints the times and ratios; exits non-zero
// only on an error.
//
//   pipetwin_partition_benchmark [--sms N] [--partitions K] [--repeats R]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "../../exec/cuda/cuda_check.hpp"
#include "../../exec/cuda/device_memory.hpp"
#include "../../exec/cuda/lanes.hpp"

namespace {

// 8 independent FMA chains per thread: issue-bound, no memory traffic but one store.
__global__ void fma_chains(float* out, int iterations) {
  float a[8];
  for (int k = 0; k < 8; ++k) a[k] = static_cast<float>(threadIdx.x + k) * 1e-3f;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], 0.999999f, 1e-7f);
  }
  float sum = 0;
  for (int k = 0; k < 8; ++k) sum += a[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

constexpr int kThreads = 256;

// Median seconds of `repeats` launches of the kernel on `stream` (after one warm-up).
double time_kernel(cudaStream_t stream, float* out, int blocks, int iterations, int repeats) {
  using clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = clock::now();
    fma_chains<<<blocks, kThreads, 0, stream>>>(out, iterations);
    pipetwin::cuda::check_launch("fma_chains");
    pipetwin::cuda::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (r > 0) seconds.push_back(std::chrono::duration<double>(clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int run(int argc, char** argv) {
  using namespace pipetwin;
  int sms = 16, partitions = 0, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--sms") sms = value;
    else if (flag == "--partitions") partitions = value;
    else if (flag == "--repeats") repeats = value;
    else throw Error("unknown option " + flag + " (use --sms N --partitions K --repeats R)");
  }
  std::string reason;
  if (!cuda::device_available(&reason)) throw Error("no CUDA device: " + reason);
  cudaDeviceProp props{};
  cuda::check_cuda(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  const int device_sms = props.multiProcessorCount;
  if (partitions <= 0) partitions = std::max(1, device_sms / sms);
  // Enough blocks to fill every SM of the whole GPU several times over.
  const int blocks = device_sms * 16;
  const int iterations = 20000;

  TaskGraph whole_graph, split_graph;
  whole_graph.processors.resize(1);
  split_graph.processors.resize(static_cast<std::size_t>(partitions));
  cuda::MemoryPool pool(cuda::LaneSet::caches_needed(whole_graph) + cuda::LaneSet::caches_needed(split_graph));
  cuda::PlacementOptions whole_options;
  whole_options.placement = "streams";
  cuda::PlacementOptions split_options;
  split_options.placement = "partitions";
  split_options.sms_per_partition = sms;

  cuda::LaneSet whole(whole_graph, whole_options, pool);
  cuda::Lane& all = whole.processor(0);
  whole.enter(all);
  cuda::DeviceBuffer out_whole(static_cast<std::int64_t>(blocks) * kThreads);
  const double whole_s = time_kernel(all.context->impl().stream, out_whole.data(), blocks, iterations, repeats);

  cuda::LaneSet split(split_graph, split_options, pool);
  std::printf("%s\n", split.description().c_str());
  std::vector<cuda::DeviceBuffer> outs;
  for (int p = 0; p < partitions; ++p) {
    split.enter(split.processor(p));
    outs.emplace_back(static_cast<std::int64_t>(blocks) * kThreads);
  }
  cuda::Lane& first = split.processor(0);
  split.enter(first);
  const double alone_s = time_kernel(first.context->impl().stream, outs[0].data(), blocks, iterations, repeats);

  // Every partition at once, each from its own host thread; partition 0's time is reported.
  std::vector<double> together_s(static_cast<std::size_t>(partitions));
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(partitions));
  std::vector<std::thread> threads;
  for (int p = 0; p < partitions; ++p) {
    threads.emplace_back([&, p] {
      try {
        cuda::Lane& lane = split.processor(p);
        split.enter(lane);
        together_s[static_cast<std::size_t>(p)] =
            time_kernel(lane.context->impl().stream, outs[static_cast<std::size_t>(p)].data(), blocks, iterations, repeats);
      } catch (...) {
        failures[static_cast<std::size_t>(p)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  const double slowest_together_s = *std::max_element(together_s.begin(), together_s.end());

  std::printf("GPU: %s, %d SMs; kernel: %d blocks x %d threads, %d iterations of 8 FMA chains\n", props.name, device_sms,
              blocks, kThreads, iterations);
  std::printf("whole GPU (plain stream)              %9.3f ms\n", whole_s * 1e3);
  std::printf("one partition of %3d SMs, alone        %9.3f ms  = %.2fx the whole GPU (SM ratio %d/%d = %.2f)\n", sms,
              alone_s * 1e3, alone_s / whole_s, device_sms, sms, static_cast<double>(device_sms) / sms);
  std::printf("%2d partitions at once, partition 0    %9.3f ms  = %.2fx alone (slowest partition %.3f ms)\n", partitions,
              together_s[0] * 1e3, together_s[0] / alone_s, slowest_together_s * 1e3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipetwin_partition_benchmark: %s\n", e.what());
    return 1;
  }
}
