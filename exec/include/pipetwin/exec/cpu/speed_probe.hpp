// A reading of the machine's speed: how long a fixed piece of arithmetic takes on each CPU.
#pragma once

#include <vector>

namespace pipetwin::cpu {

// Seconds a fixed piece of vector arithmetic (16 million multiply-adds on 256 floats in the L1
// cache: 0.28 ms with AVX-512 on a 2-vCPU AMD EPYC) took on each of `cpus`, one thread pinned to
// each in turn: the fastest of `repeats` timings per CPU, so that a blip of a millisecond (the
// host taking the vCPU for an interrupt) does not count where a state that lasts (a hyperthread
// sibling the host gave to another guest, a lower clock) does, since every repeat has it. The work
// touches no memory beyond its 1 KiB: the reading follows what a core's arithmetic gets, not its
// caches or memory bandwidth. Empty `cpus`: the calling thread, unpinned, one reading. Throws
// Error for repeats < 1 or a CPU the thread cannot be pinned to.
std::vector<double> time_fixed_work_s(const std::vector<int>& cpus, int repeats = 5);

// The CPUs a validation reads (time_fixed_work_s) beside its runs: where the runs' threads are
// pinned, the first `largest_processors` of `pinned_cpus` (the ones they use); otherwise every CPU
// this process may run on (the OS may place a thread on any), at most kMostReadCpus of them.
constexpr int kMostReadCpus = 8;
std::vector<int> cpus_to_read(const std::vector<int>& pinned_cpus, int largest_processors);

}  // namespace pipetwin::cpu
