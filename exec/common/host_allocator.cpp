// glibc's mmap and trim thresholds for the executors (pipetwin/exec/host_allocator.hpp).
#include "pipetwin/exec/host_allocator.hpp"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pipetwin {

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (half its per-thread heap size);
  // setting it also stops glibc from moving the threshold as the process runs.
  constexpr int kMmapThresholdBytes = 32 << 20;
  constexpr int kTrimThresholdBytes = 256 << 20;
  // A thread's arena (every executor thread but main allocates from one) grows in heaps of 64 MiB
  // (twice the largest mmap threshold). When its newest heap empties, glibc's heap_trim unmaps it
  // whole, whatever the trim threshold, unless the heap before has less room left than the top
  // pad: a pad of a whole heap keeps every heap. Measured on resnet8's zb-h1 at P=1 (81 MiB live
  // at its peak) in a process that had profiled first: 53,000 page faults a second, steps 175 ms
  // against 152 ms; the pad only reserves address space (pages are touched as buffers use them).
  constexpr int kTopPadBytes = 64 << 20;
  return mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 &&
         mallopt(M_TOP_PAD, kTopPadBytes) == 1;
#else
  return false;
#endif
}

}  // namespace pipetwin
