// Benchmark: batch norm's fused epilogues (exec/cpu/kernels/batch_norm.cpp) against the steps one
// after the other, on the shapes of a CIFAR ResNet's stages (16, 32 and 64 channels of 32x32,
// 16x16 and 8x8, one microbatch of 32 samples by default):
//   forward   batch_norm_add_relu_in_place (with the residual, ReLU) against
//             batch_norm_forward_in_place, z += residual, relu_forward;
//   backward  batch_norm_backward_through_relu against relu_backward then batch_norm_backward.
//
//   pipetwin_epilogue_benchmark [--samples 32] [--repeats 41] [--rounds 3]
//
// Prints each round's medians in microseconds; asserts nothing (the values' equality, bit for
// bit, is tests/test_cpu_kernels.cpp's). Each forward starts from a copy of the convolution's
// output, as the composition's forward writes over its own; the copy's time is printed and left
// out of both. Freed buffers stay in the heap, as in the executors (keep_freed_host_memory).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/host_allocator.hpp"
#include "whole_number_options.hpp"

namespace {

using pipetwin::cpu::BatchNormStash;
using pipetwin::cpu::Matrix;
using pipetwin::cpu::Vector;

template <typename Work>
double median_us(const Work& work, int repeats) {
  std::vector<double> times_us;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times_us.begin(), times_us.begin() + repeats / 2, times_us.end());
  return times_us[static_cast<std::size_t>(repeats / 2)];
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 32, repeats = 41, rounds = 3;
  const auto parsed = pipetwin::experiments::parse_whole_number_options(
      argc, argv, "pipetwin_epilogue_benchmark", "[--samples N] [--repeats R] [--rounds K]",
      "  batch norm's fused epilogue against its steps one after the other, per ResNet stage shape\n"
      "  (defaults: 32 samples, medians of 41 repeats, 3 rounds)\n",
      {{"--samples", &samples}, {"--repeats", &repeats}, {"--rounds", &rounds}});
  if (parsed != pipetwin::experiments::Parsed::run) return parsed == pipetwin::experiments::Parsed::bad ? 2 : 0;
  // As the executors do: freed buffers stay in the heap (no page faults per call).
  pipetwin::keep_freed_host_memory();
  struct Stage {
    long channels, positions;
  };
  for (const Stage stage : {Stage{16, 32 * 32}, Stage{32, 16 * 16}, Stage{64, 8 * 8}}) {
    const long rows = stage.channels * stage.positions;
    const Matrix conv_output = Matrix::Random(rows, samples), residual = Matrix::Random(rows, samples);  // [C*HW x n]
    const Matrix dy = Matrix::Random(rows, samples);
    const Vector gamma = Vector::Random(stage.channels), beta = Vector::Random(stage.channels);
    BatchNormStash stash;
    Matrix output;  // the forward's, which the backwards mask by
    for (int round = 1; round <= rounds; ++round) {
      const double copy_us = median_us([&] { output = conv_output; }, repeats);
      const double separate_us = median_us([&] {
        output = conv_output;
        pipetwin::cpu::batch_norm_forward_in_place(stage.channels, gamma, beta, output, stash);
        output += residual;
        pipetwin::cpu::relu_forward(output);
      }, repeats) - copy_us;
      const double fused_us = median_us([&] {
        output = conv_output;
        pipetwin::cpu::batch_norm_add_relu_in_place(stage.channels, gamma, beta, output, stash, &residual, true);
      }, repeats) - copy_us;
      const double backward_separate_us = median_us([&] {
        Vector dgamma, dbeta;
        const Matrix masked = pipetwin::cpu::relu_backward(output, dy);
        const Matrix dz = pipetwin::cpu::batch_norm_backward(stage.channels, gamma, stash, masked, &dgamma, &dbeta);
      }, repeats);
      const double backward_fused_us = median_us([&] {
        Vector dgamma, dbeta;
        const Matrix dz =
            pipetwin::cpu::batch_norm_backward_through_relu(stage.channels, gamma, stash, output, dy, &dgamma, &dbeta);
      }, repeats);
      std::printf("%ld channels x %ld positions x %d samples, round %d: forward %.0f -> %.0f us (%+.1f%%), "
                  "backward %.0f -> %.0f us (%+.1f%%) (input copy %.0f us, left out)\n",
                  stage.channels, stage.positions, samples, round, separate_us, fused_us,
                  100 * (fused_us / separate_us - 1), backward_separate_us, backward_fused_us,
                  100 * (backward_fused_us / backward_separate_us - 1), copy_us);
    }
  }
  return 0;
}
