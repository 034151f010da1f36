// Optional thread pinning for the executors (TrainingOptions::pin_cpus, `--pin-threads`): the
// CPUs this process may run on, and pinning the calling thread to one of them. Linux only;
// elsewhere there is nothing to pin to and pinning is refused.
#pragma once
#include <vector>

namespace pipetwin {

// The CPU ids in this process's affinity mask (taskset, a cgroup's cpuset, mpirun's binding), in
// increasing order; empty where the platform cannot say.
std::vector<int> usable_cpu_ids();
// How many: usable_cpu_ids()'s count, or the machine's hardware threads where the platform cannot
// say (what a CPU calibration records as its cores).
int usable_cpu_count();

// The CPUs a run pins to (TrainingOptions::pin_cpus): usable_cpu_ids(), or pipetwin::Error where
// the platform cannot say.
std::vector<int> cpus_to_pin();

// Pins the calling thread to CPU `cpu`; throws pipetwin::Error naming the CPU when it cannot.
void pin_this_thread(int cpu);

// The CPU processor `processor` runs on when pinned: the list's entries in turn (p mod its size).
inline int pinned_cpu(const std::vector<int>& cpus, int processor) {
  return cpus[static_cast<std::size_t>(processor) % cpus.size()];
}

}  // namespace pipetwin
