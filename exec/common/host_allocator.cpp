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
  return mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1;
#else
  return false;
#endif
}

}  // namespace pipetwin
