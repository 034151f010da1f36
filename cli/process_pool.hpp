// Runs independent jobs in forked worker processes (SystemC's kernel is one per process, so
// parallel simulations need processes, not threads). Each job returns one line of text.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pipetwin::cli {

// Job i goes to worker i % workers, so order jobs to balance the load. `job` must not throw
// (return an error line instead). `progress(done)` is called in this process as results arrive.
// With workers <= 1 everything runs here.
std::vector<std::string> run_in_processes(std::size_t jobs, int workers,
                                          const std::function<std::string(std::size_t)>& job,
                                          const std::function<void(std::size_t)>& progress);

}  // namespace pipetwin::cli
