// GEMM and memory-bound kernel times for the operator-level cost model (gpu_timing.hpp).
//
// A GEMM is cut into tiles of C; each tile is one thread block (CTA). cuBLAS's typical tiles are
// 256x128 down to 64x64 (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001,
// sections 2.3 and 3): large tiles reuse each operand byte more, small tiles give more blocks to
// fill the SMs. Blocks run in waves of (SMs x blocks per SM); a partial last wave costs a whole
// one (wave quantisation), a partial tile a whole tile (tile quantisation). The time of a wave is
// one block's: its main loop (2 x tile_m x tile_n x K FLOPs at the SM's share of the rate, which is
// the tensor peak x gemm_efficiency, or lower when the tile's operand traffic through L2
// ((tile_m + tile_n) x K x bytes per block) exceeds the SM's share of L2 bandwidth), the fill of
// its software pipeline, and its epilogue (the C tile stored at its share of DRAM bandwidth). The kernel
// takes the best tile, as cuBLAS's heuristics aim to, and no less than its DRAM traffic
// (A, B and C once) at the achievable bandwidth. When the output has too few tiles to fill the
// SMs, K is split over several blocks and their partial sums added by a second kernel.
#include "pipetwin/models/gpu_timing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

struct Tile {
  int m, n;
};

// The tile sizes of the guide's section 2.3, largest first, and the narrow ones cuBLAS and cuDNN
// also ship for thin operands (32 wide: CUTLASS's and cuDNN's small-channel kernels). A block of a
// tile of area A shares its SM with (256 x 128) / A - 1 others (the register file and shared memory
// hold about one 256x128 tile's accumulators and operand stages), at most 32 blocks per SM (the
// architectural limit of Volta to Hopper).
constexpr Tile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128},
                           {64, 64},   {256, 32},  {32, 256},  {128, 32}, {32, 128}, {64, 32},  {32, 64}, {32, 32}};
constexpr double kLargestTileArea = 256.0 * 128.0;
constexpr double kMaxBlocksPerSm = 32;
// K advances in steps of 32 elements (one main-loop stage of a tensor-core kernel); a K that is
// not a multiple pays for the whole last step.
constexpr double kTileK = 32;
// A block's software pipeline holds 3 stages of K in flight (CUTLASS's multistage sm80 kernels,
// kStages = 3): its first 2 steps load before any math starts.
constexpr double kPipelineFillSteps = 2;
// Split-K (cuBLAS and cuDNN's weight-gradient kernels): at most 256 slices, each at least 128 deep.
constexpr double kMaxSplitK = 256;
constexpr double kMinSplitSlice = 128;

double ceil_div(double a, double b) { return std::ceil(a / b - 1e-12); }

}  // namespace

double gemm_dram_bytes(const GemmShape& shape, double element_bytes) {
  return (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * shape.batch * element_bytes;
}

GemmTiming gemm_timing(const GpuSpec& gpu, const ProcessorSpec& p, const GemmShape& shape,
                       double element_bytes, double causal) {
  if (!(shape.m > 0 && shape.n > 0 && shape.k > 0 && shape.batch > 0)) {
    throw Error("a GEMM needs positive sizes, got " + short_number(shape.m) + " x " + short_number(shape.n) +
                " x " + short_number(shape.k) + " (batch " + short_number(shape.batch) + ")");
  }
  if (p.sm_count <= 0) throw Error("the operator cost model needs the GPU's sm_count");
  const double sms = static_cast<double>(p.sm_count);
  const double peak_per_sm = p.peak_flops_per_s * gpu.gemm_efficiency / sms;
  const double l2_per_sm = gpu.l2_bytes_per_s / sms;
  const double k_padded = ceil_div(shape.k, kTileK) * kTileK;
  const auto dram_per_block = [&](double blocks_per_sm) {
    return p.memory_bytes_per_s * gpu.memory_efficiency / (sms * blocks_per_sm);
  };
  GemmTiming best;
  best.seconds = std::numeric_limits<double>::infinity();
  for (const Tile& tile : kTiles) {
    const double blocks_per_sm = std::min(kMaxBlocksPerSm, std::max(1.0, kLargestTileArea / (tile.m * tile.n)));
    const double output_tiles = std::max(1.0, std::ceil(ceil_div(shape.m, tile.m) * ceil_div(shape.n, tile.n) *
                                                        shape.batch * causal - 1e-9));
    // Each block: FLOP per operand byte it loads through L2.
    const double intensity = 2.0 * tile.m * tile.n / ((tile.m + tile.n) * element_bytes);
    const double block_rate = std::min(peak_per_sm, l2_per_sm * intensity) / blocks_per_sm;
    // Split-K: too few output tiles to fill the SMs and a long K; each of `split` blocks takes a
    // slice of K, and a second pass sums their fp32 partial tiles. The candidates: no split, and
    // the largest split that still fits in one wave.
    const double slots = sms * blocks_per_sm;
    const double fill = std::floor(slots / output_tiles);
    const double deepest = std::floor(k_padded / kMinSplitSlice);
    for (const double split : {1.0, std::max(1.0, std::min({fill, deepest, kMaxSplitK}))}) {
      const double k_slice = ceil_div(k_padded / split, kTileK) * kTileK;
      const double waves = ceil_div(output_tiles * split, slots);
      // A block's main loop, its pipeline fill, and its epilogue: the C tile (fp32 partials under
      // split-K) stored at the block's share of the DRAM bandwidth.
      const double main_loop_s = 2.0 * tile.m * tile.n * (k_slice + kPipelineFillSteps * kTileK) / block_rate;
      const double epilogue_s = tile.m * tile.n * (split > 1 ? 4.0 : element_bytes) / dram_per_block(blocks_per_sm);
      double seconds = waves * (main_loop_s + epilogue_s);
      if (split > 1) {
        seconds += std::max(gpu.kernel_s, shape.m * shape.n * shape.batch * (split + 1) * 4.0 /
                                              (p.memory_bytes_per_s * gpu.memory_efficiency));
      }
      if (seconds < best.seconds) best = {tile.m, tile.n, static_cast<int>(split), waves, seconds};
    }
  }
  best.seconds = std::max({best.seconds, gemm_dram_bytes(shape, element_bytes) / (p.memory_bytes_per_s * gpu.memory_efficiency),
                           gpu.kernel_s});
  return best;
}

double gpu_kernel_seconds(const GpuSpec& gpu, const ProcessorSpec& p, const GpuKernel& kernel,
                          double element_bytes) {
  if (kernel.is_gemm) return gemm_timing(gpu, p, kernel.gemm, element_bytes, kernel.causal).seconds;
  const double memory_s = kernel.bytes / (p.memory_bytes_per_s * gpu.memory_efficiency);
  const double compute_s = kernel.flops / gpu.fp32_flops_per_s;
  return std::max({memory_s, compute_s, gpu.kernel_s});
}

}  // namespace pipetwin
