// A heap call counter to preload into a process (LD_PRELOAD; glibc only): it counts every
// malloc, calloc, realloc and aligned allocation, and their bytes, apart for the process's first
// thread and for every other thread (the executors' processors and links), and prints both when
// the process ends. experiments/allocations_per_step.py runs `pipetwin run` under it at two step
// counts: the other threads' difference over the extra steps is a step's allocations on the hot
// path (the first thread builds the graph, which grows with the steps too).
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>

extern "C" {
void* __libc_malloc(std::size_t bytes);
void __libc_free(void* p);
void* __libc_calloc(std::size_t count, std::size_t bytes);
void* __libc_realloc(void* p, std::size_t bytes);
void* __libc_memalign(std::size_t alignment, std::size_t bytes);
}

namespace {

struct Counts {
  std::atomic<long long> calls{0}, bytes{0};
};
Counts first_thread, other_threads;  // the shim's own tally (it has no other place to keep it)

Counts& counts_of_this_thread() {
  static thread_local int role = 0;  // 0: not asked yet, 1: the process's first thread, 2: another
  if (role == 0) role = syscall(SYS_gettid) == getpid() ? 1 : 2;
  return role == 1 ? first_thread : other_threads;
}

void count(std::size_t bytes) {
  Counts& c = counts_of_this_thread();
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(static_cast<long long>(bytes), std::memory_order_relaxed);
}

__attribute__((destructor)) void report() {
  std::fprintf(stderr, "allocation_counter: first thread %lld calls %lld bytes; other threads %lld calls %lld bytes\n",
               first_thread.calls.load(), first_thread.bytes.load(), other_threads.calls.load(),
               other_threads.bytes.load());
}

}  // namespace

extern "C" {
void* malloc(std::size_t bytes) {
  count(bytes);
  return __libc_malloc(bytes);
}
void free(void* p) { __libc_free(p); }
void* calloc(std::size_t n, std::size_t bytes) {
  count(n * bytes);
  return __libc_calloc(n, bytes);
}
void* realloc(void* p, std::size_t bytes) {
  count(bytes);
  return __libc_realloc(p, bytes);
}
void* memalign(std::size_t alignment, std::size_t bytes) {
  count(bytes);
  return __libc_memalign(alignment, bytes);
}
void* aligned_alloc(std::size_t alignment, std::size_t bytes) { return memalign(alignment, bytes); }
int posix_memalign(void** out, std::size_t alignment, std::size_t bytes) {
  void* p = memalign(alignment, bytes);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}
