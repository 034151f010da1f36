// Benchmark: what one convolution's forward (oneDNN on kept plans, ReLU as a post-op, as the CPU
// executor runs it) costs depending on where its memory was last touched:
//   warm            its input made on this core just before, its output's memory freed here last;
//   output cold     its input made here just before, after this core streamed 64 MiB (which
//                   pushed the memory its output gets, the last output's, out of its caches);
//   input cold      its input made here, then 64 MiB streamed here (input and output cold);
//   input remote    its input written by the other core just before (lines dirty in that core's
//                   cache: a pipeline's second processor reading an activation sent a moment ago);
//   remote, aged    written by the other core, which then streamed 64 MiB (the lines left that
//                   core's private caches first: an activation sent a while ago);
//   remote, streamed  written by the other core with streaming stores, which bypass its caches
//                   (x86-64 only): what a sender's copy written so would leave the reader;
//   other core streaming: warm, input cold  the warm and input-cold rows again while the other
//                   core streams through 64 MiB all along (two processors missing at once).
//
//   pipetwin_conv_locality_benchmark [--channels 16] [--size 32] [--out-channels 32] [--stride 2]
//                                    [--samples 32] [--repeats 40] [--rounds 3]
//
// Defaults: resnet8's stage2.block1.conv1 (16 channels of 32x32 to 32 channels, 3x3, stride 2,
// padding 1) on a microbatch of 32 samples. The "remote" rows need two usable CPUs (the
// threads are pinned to the first two); with one they are left out, saying why. Prints each
// round's medians in microseconds and asserts nothing. docs/executor.md, "Where gpipe's time at P
// = 2 goes", has the figures of 2026-11-30.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "pipetwin/exec/cpu/onednn_kernels.hpp"
#include "pipetwin/exec/host_allocator.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"
#include "whole_number_options.hpp"

namespace {

using pipetwin::cpu::Matrix;
using pipetwin::cpu::Vector;

constexpr std::size_t kStreamBytes = std::size_t{64} << 20;  // more than a core's caches and a VM's share of L3

// Touches one float per cache line of `floats`, writing it: the lines end up dirty in this core's
// caches and push out what was there.
float stream_through(std::vector<float>& floats) {
  float sum = 0;
  for (std::size_t i = 0; i < floats.size(); i += 16) {
    floats[i] += 1;
    sum += floats[i];
  }
  return sum;
}

#if defined(__x86_64__)
constexpr bool kStreamingStores = true;
#else
constexpr bool kStreamingStores = false;  // the "remote, streamed" row is left out
#endif

// A copy of `m` whose stores bypass this core's caches (SSE2 streaming stores, then a fence);
// a plain copy where the target has no such stores.
Matrix streamed_copy(const Matrix& m) {
  Matrix copy(m.rows(), m.cols());
#if defined(__x86_64__)
  const float* from = m.data();
  float* to = copy.data();
  Eigen::Index i = 0;
  for (; i < m.size() && (reinterpret_cast<std::uintptr_t>(to + i) & 15u) != 0; ++i) to[i] = from[i];
  for (; i + 4 <= m.size(); i += 4) _mm_stream_ps(to + i, _mm_loadu_ps(from + i));
  for (; i < m.size(); ++i) to[i] = from[i];
  _mm_sfence();
#else
  copy = m;
#endif
  return copy;
}

}  // namespace

int main(int argc, char** argv) {
  int channels = 16, size = 32, out_channels = 32, stride = 2, samples = 32, repeats = 40, rounds = 3;
  const auto parsed = pipetwin::experiments::parse_whole_number_options(
      argc, argv, "pipetwin_conv_locality_benchmark",
      "[--channels C] [--size HW] [--out-channels K] [--stride S]\n"
      "                                        [--samples N] [--repeats R] [--rounds K]",
      "  one 3x3 convolution's forward (oneDNN, kept plans) with its input and output memory warm, cold,\n"
      "  or just written by the other core, and warm or cold while the other core streams through memory\n"
      "  (defaults: 16 channels of 32x32 to 32, stride 2, 32 samples, medians of 40 repeats, 3 rounds)\n",
      {{"--channels", &channels}, {"--size", &size}, {"--out-channels", &out_channels}, {"--stride", &stride},
       {"--samples", &samples}, {"--repeats", &repeats}, {"--rounds", &rounds}});
  if (parsed != pipetwin::experiments::Parsed::run) return parsed == pipetwin::experiments::Parsed::bad ? 2 : 0;
  pipetwin::exec::ConvGeometry g;
  g.in_channels = channels;
  g.height = g.width = size;
  g.out_channels = out_channels;
  g.kernel = 3;
  g.stride = stride;
  g.padding = 1;
  if (!pipetwin::cpu::onednn::available()) {
    std::printf("pipetwin_conv_locality_benchmark: this build has no oneDNN; nothing to time\n");
    return 0;
  }
  try {
    pipetwin::keep_freed_host_memory();  // as the executors: freed buffers stay in the heap
    const std::vector<int> cpus = pipetwin::usable_cpu_ids();
    const bool two_cpus = cpus.size() >= 2;
    if (two_cpus) pipetwin::pin_this_thread(cpus[0]);
    const Matrix weights = Matrix::Random(g.out_channels, g.patch());  // [K x C*3*3]
    const Vector bias = Vector::Zero(g.out_channels);
    const Matrix input = Matrix::Random(g.in_channels * g.height * g.width, samples);  // [C*H*W x n]
    std::vector<float> here(kStreamBytes / sizeof(float), 1.f), there(kStreamBytes / sizeof(float), 1.f);
    pipetwin::cpu::onednn::PlanCache plans;
    float sink = 0;
    // The other core's threads pin themselves as this one did; a refusal there ends the run
    // with its reason, not the process.
    std::atomic<bool> pinned_there{true};
    const auto pin_there = [&] {
      try {
        pipetwin::pin_this_thread(cpus[1]);
      } catch (const std::exception&) {
        pinned_there = false;
      }
    };
    // Each repeat: `prepare` makes the input (and leaves the caches as its row says), then the
    // forward alone is timed.
    const auto median_us = [&](const std::function<Matrix()>& prepare) {
      std::vector<double> times_us;
      for (int r = 0; r < repeats; ++r) {
        const Matrix x = prepare();
        const auto start = std::chrono::steady_clock::now();
        const Matrix z = pipetwin::cpu::onednn::conv2d_forward(g, weights, bias, x, /*relu=*/true, &plans);
        times_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
        sink += z(0, 0);
      }
      std::nth_element(times_us.begin(), times_us.begin() + repeats / 2, times_us.end());
      return times_us[static_cast<std::size_t>(repeats / 2)];
    };
    // The other core writes the input (then streams 64 MiB, when `age`; with streaming stores,
    // when `streamed`); this thread waits for it.
    const auto written_there = [&](bool age, bool streamed) {
      Matrix x(input.rows(), input.cols());
      std::thread writer([&] {
        pin_there();
        x = streamed ? streamed_copy(input) : input;
        if (age) sink += stream_through(there);
      });
      writer.join();
      return x;
    };
    std::printf("conv %lldx%lldx%lld -> %lld, 3x3, stride %lld, %d samples (input %.2f MiB, output %.2f MiB)\n",
                static_cast<long long>(g.in_channels), static_cast<long long>(g.height),
                static_cast<long long>(g.width), static_cast<long long>(g.out_channels),
                static_cast<long long>(g.stride), samples,
                static_cast<double>(input.size() * sizeof(float)) / (1 << 20),
                static_cast<double>(g.out_channels * g.out_height() * g.out_width() * samples * sizeof(float)) / (1 << 20));
    if (!two_cpus) std::printf("one usable CPU: the rows that need another core are left out\n");
    for (int round = 1; round <= rounds; ++round) {
      const double warm_us = median_us([&] { return Matrix(input); });
      const double output_cold_us = median_us([&] {
        sink += stream_through(here);
        return Matrix(input);
      });
      const double input_cold_us = median_us([&] {
        Matrix x = input;
        sink += stream_through(here);
        return x;
      });
      std::printf("round %d: warm %.0f us, output cold %.0f (%+.1f%%), input cold %.0f (%+.1f%%)", round, warm_us,
                  output_cold_us, 100 * (output_cold_us / warm_us - 1), input_cold_us,
                  100 * (input_cold_us / warm_us - 1));
      if (two_cpus) {
        const double remote_us = median_us([&] { return written_there(false, false); });
        const double aged_us = median_us([&] { return written_there(true, false); });
        std::printf(", input remote %.0f (%+.1f%%), remote, aged %.0f (%+.1f%%)", remote_us,
                    100 * (remote_us / warm_us - 1), aged_us, 100 * (aged_us / warm_us - 1));
        if (kStreamingStores) {
          const double streamed_us = median_us([&] { return written_there(false, true); });
          std::printf(", remote, streamed %.0f (%+.1f%%)", streamed_us, 100 * (streamed_us / warm_us - 1));
        }
        // The same warm and cold rows while the other core streams through memory all along.
        std::atomic<bool> busy{true};
        std::thread other([&] {
          pin_there();
          float other_sink = 0;
          while (busy.load(std::memory_order_relaxed)) other_sink += stream_through(there);
          sink += other_sink;
        });
        const double warm_busy_us = median_us([&] { return Matrix(input); });
        const double cold_busy_us = median_us([&] {
          Matrix x = input;
          sink += stream_through(here);
          return x;
        });
        busy.store(false);
        other.join();
        std::printf(", other core streaming: warm %.0f (%+.1f%%), input cold %.0f (%+.1f%%)", warm_busy_us,
                    100 * (warm_busy_us / warm_us - 1), cold_busy_us, 100 * (cold_busy_us / warm_us - 1));
      }
      std::printf("\n");
      if (!pinned_there) throw pipetwin::Error("could not pin a thread to CPU " + std::to_string(cpus[1]));
    }
    volatile float observed = sink;  // the results are observed: not optimised away
    static_cast<void>(observed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipetwin_conv_locality_benchmark: %s\n", e.what());
    return 1;
  }
  return 0;
}
