// What re-reading data costs a core by how much other data it touched since (Calibration::
// reuse_extra_s_per_byte): the curve the weight-reuse model prices a task's weights with
// (schedule/weight_reuse.hpp).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace pipetwin::cpu {

// The size of this machine's per-core L2 cache from sysfs (cpu0's level-2 data or unified cache),
// in bytes; 0 where it cannot be read.
std::int64_t core_l2_bytes();

// The largest cache the curve is measured for: its sweeps hold 32 times the cache (512 MiB here).
inline constexpr std::int64_t kMostReuseCurveCacheBytes = std::int64_t{16} << 20;

// The reuse curve, on the calling thread: a block of `block_bytes` read (warm), then
// `working_set - block_bytes` of other data swept (read and written, as a backward writes its
// gradients), then the block read again and timed; the median of `repeats` such reads per working
// set, less the median with no sweep, per byte, made non-decreasing in the working set (a larger
// working set never leaves more in the cache). Working sets from the block to 2.5 times
// `cache_bytes` in steps of an eighth of it, then 16 times it (the far end: the data beyond every
// private cache). Throws for sizes below 4 KiB, a cache above kMostReuseCurveCacheBytes (the
// sweeps would hold 32 times it) or repeats below 1.
std::vector<std::pair<std::int64_t, double>> measure_reuse_curve(std::int64_t cache_bytes, int repeats,
                                                                 std::int64_t block_bytes = 256 << 10);

}  // namespace pipetwin::cpu
