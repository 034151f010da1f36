// The CPUs this process may run on, and pinning a thread to one (pipetwin/exec/thread_pinning.hpp).
#include "pipetwin/exec/thread_pinning.hpp"

#include <cstring>
#include <string>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "pipetwin/models/error.hpp"

namespace pipetwin {

std::vector<int> usable_cpu_ids() {
  std::vector<int> ids;
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return ids;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) ids.push_back(cpu);
  }
#endif
  return ids;
}

int usable_cpu_count() {
  const std::vector<int> ids = usable_cpu_ids();
  return ids.empty() ? static_cast<int>(std::thread::hardware_concurrency()) : static_cast<int>(ids.size());
}

std::vector<int> cpus_to_pin() {
  std::vector<int> cpus = usable_cpu_ids();
  if (cpus.empty()) throw Error("cannot pin threads: this system does not say which CPUs the process may run on");
  return cpus;
}

void pin_this_thread(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) throw Error("cannot pin a thread to CPU " + std::to_string(cpu) + ": no such CPU");
  cpu_set_t mask;
  CPU_ZERO(&mask);
  CPU_SET(cpu, &mask);
  const int status = pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
  if (status != 0) throw Error("cannot pin a thread to CPU " + std::to_string(cpu) + ": " + std::strerror(status));
#else
  throw Error("thread pinning needs Linux (CPU " + std::to_string(cpu) + ")");
#endif
}

}  // namespace pipetwin
