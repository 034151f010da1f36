// Runs independent jobs in forked worker processes (SystemC's kernel is one per process, so
// parallel simulations need processes, not threads). Each job returns one line of text.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pipetwin::cli {

// Jobs go out in index order, each to the first worker free (one in hand each), so put the
// longest first: the last ones handed out then leave the workers' ends close. `job` must not
// throw (return an error line instead) and its answer must hold no newline. `progress(done)` is
// called in this process as results arrive. With workers <= 1 everything runs here. A worker
// that dies is an error naming how it ended and the job it was on (`name_job(i)`, e.g. "gpipe
// at P = 4").
std::vector<std::string> run_in_processes(std::size_t jobs, int workers,
                                          const std::function<std::string(std::size_t)>& job,
                                          const std::function<void(std::size_t)>& progress,
                                          const std::function<std::string(std::size_t)>& name_job);

// How run_in_processes runs `jobs` jobs on `workers`, for a table's header: "3 worker processes"
// (never more than the jobs), or "in this process" when it forks none.
std::string describe_workers(std::size_t jobs, int workers);

}  // namespace pipetwin::cli
