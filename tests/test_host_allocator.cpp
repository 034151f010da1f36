// keep_freed_host_memory: glibc's heaps keep the memory the executors free, so that a buffer
// allocated again is not faulted in again. Checked with glibc's own counters (mallinfo2) and the
// kernel's count of this thread's page faults (getrusage), not with timings.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "pipetwin/exec/host_allocator.hpp"

namespace pipetwin {
namespace {

// AddressSanitizer replaces glibc's malloc (and answers mallopt with a refusal): nothing to check.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMallocReplaced = true;
#else
constexpr bool kMallocReplaced = false;
#endif

#if defined(__GLIBC__)
TEST_CASE("keep_freed_host_memory: a 4 MiB buffer comes from the heap, not from its own mmap") {
  // mallinfo2's hblkhd counts the bytes of live mmap'd blocks: glibc's default threshold (128 KiB,
  // raised as the process frees) would mmap a fresh 4 MiB buffer; after the call it must not.
  if (kMallocReplaced) {
    MESSAGE("skipped: AddressSanitizer replaces glibc's malloc");
    return;
  }
  REQUIRE(keep_freed_host_memory());
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* buffer = std::malloc(std::size_t{4} << 20);
  REQUIRE(buffer != nullptr);
  CHECK(mallinfo2().hblkhd == mapped_before);
  std::free(buffer);
}
#endif

#if defined(__GLIBC__) && defined(__linux__)
// This thread's minor page faults so far (pages the kernel mapped in on first touch).
long thread_minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

TEST_CASE("keep_freed_host_memory: a thread that frees 96 MiB and allocates it again faults (almost) no pages in") {
  // A thread other than main allocates from an arena of 64 MiB heaps: 96 MiB live spans two. With
  // only the trim threshold set, glibc unmaps the second heap once it is empty, and the second
  // round faults its 32 MiB (8192 pages) in again; kept, the second round touches mapped pages.
  if (kMallocReplaced) {
    MESSAGE("skipped: AddressSanitizer replaces glibc's malloc");
    return;
  }
  REQUIRE(keep_freed_host_memory());
  constexpr std::size_t kBlockBytes = std::size_t{1} << 20;  // below the mmap threshold: heap memory
  constexpr int kBlocks = 96;
  constexpr long kPageBytes = 4096;
  void* (*volatile fill)(void*, int, std::size_t) = std::memset;  // the buffers are touched, not optimised away
  long first_round_faults = 0, second_round_faults = 0;
  bool allocated = true;
  std::thread([&] {  // no assertions in here: a failed REQUIRE would throw out of the thread
    const auto round = [&] {
      const long before = thread_minor_faults();
      std::vector<void*> blocks;
      for (int b = 0; b < kBlocks; ++b) {
        blocks.push_back(std::malloc(kBlockBytes));
        if (blocks.back() == nullptr) {
          allocated = false;
          break;
        }
        fill(blocks.back(), 1, kBlockBytes);
      }
      const long faults = thread_minor_faults() - before;
      for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
      return faults;
    };
    first_round_faults = round();
    second_round_faults = round();
  }).join();
  // The first round maps its pages (unless the arena kept some from an earlier thread; here, in a
  // fresh process, 24580 faults). The second must fault in under 1/8 of its 96 MiB.
  REQUIRE(allocated);
  const long pages = static_cast<long>(kBlocks * kBlockBytes) / kPageBytes;
  CAPTURE(first_round_faults);
  CAPTURE(second_round_faults);
  CHECK(second_round_faults < pages / 8);
}
#endif

}  // namespace
}  // namespace pipetwin
