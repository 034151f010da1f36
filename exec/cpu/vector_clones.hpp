// One binary, the widest vectors the machine has: PIPETWIN_VECTOR_CLONES before a function
// compiles it once per x86-64 vector ISA (AVX-512, AVX2, the baseline's SSE2) and the loader picks
// the clone the CPU runs (GCC and Clang function multiversioning, an ifunc). The build has no
// -march flag, so code without it runs SSE2 on every machine. A clone is called through a pointer
// and is never inlined: put it on a whole loop nest, not on a helper called per element; helpers
// marked PIPETWIN_INLINE_IN_CLONE are compiled inside the clone that calls them, for its ISA (a
// lambda too large to inline is a function of its own, compiled for the baseline).
//
// Also here: lane_sum, a float sum in one fixed order whatever the vector width, so that every
// clone of a kernel gives the same bits (the kernels' files are built with -ffp-contract=off for
// the same reason: the AVX-512 clone would otherwise fuse multiply-adds the others cannot).
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#define PIPETWIN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PIPETWIN_VECTOR_CLONES
#endif

#if defined(__GNUC__)
#define PIPETWIN_INLINE_IN_CLONE inline __attribute__((always_inline))
#else
#define PIPETWIN_INLINE_IN_CLONE inline
#endif

namespace pipetwin::cpu {

// Lanes of lane_sum: 16 floats, one AVX-512 register, two AVX2 ones, four SSE ones.
inline constexpr int kSumLanes = 16;

// The sum of value(i) for i in [0, size), as 16 partial sums (lane k takes i = k, k + 16, ...) added
// pairwise at the end (lane k and k + 8, then k and k + 4, ...): the same order, and so the same
// float, in every clone, where a plain loop's sum would not vectorize (float addition is not
// associative) and Eigen's follows its packet width.
template <class Value>
PIPETWIN_INLINE_IN_CLONE float lane_sum(std::int64_t size, Value value) {
  float lanes[kSumLanes] = {};
  std::int64_t i = 0;
  for (; i + kSumLanes <= size; i += kSumLanes) {
    for (int k = 0; k < kSumLanes; ++k) lanes[k] += value(i + k);
  }
  for (int k = 0; i + k < size; ++k) lanes[k] += value(i + k);
  for (int width = kSumLanes / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) lanes[k] += lanes[k + width];
  }
  return lanes[0];
}

}  // namespace pipetwin::cpu
