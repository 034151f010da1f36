// How the process's C library hands back freed host memory, set for the executors. They allocate
// a task's buffers as it runs and free them when the last reader is done. With glibc's defaults a
// buffer over 128 KiB is its own mmap: each free unmaps it and the next allocation faults its
// pages in again, zeroed (measured: 45% of a lenet5 training step, and a calibration slower than
// the run it predicts, because glibc raises that threshold as it goes). Process-wide, so it is
// called by the programs that run executors (the CLI's main, the Python functions that train,
// profile and validate), never by the library on its own.
#pragma once

namespace pipetwin {

// Buffers up to 32 MiB come from the heap and freed memory stays there for reuse (up to 256 MiB
// of free memory at the main heap's top before it is trimmed; a thread arena's heaps are kept
// whole). False where the C library is not glibc (nothing is changed).
bool keep_freed_host_memory();

}  // namespace pipetwin
