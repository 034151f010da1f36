// The CLI's options to exec's profile_cpu or profile_cuda, with progress on stderr.
#include "profile_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/exec/cuda/cuda_plugin.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/rank_link.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cli {

Calibration profile_device_calibration(const GraphConfig& config, const ExecutorOptions& executor, int repeats,
                                       bool progress, int concurrent, cpu::ConcurrentTiming timing) {
  const ScheduleRequest request = make_request(config);
  const auto data = load_data(executor, request.network, "train");
  std::function<void(const std::string&)> report;
  if (progress) report = [](const std::string& line) { std::cerr << line << "\n"; };
  if (executor.device == "cuda") {
    cuda::CudaOptions cuda = executor.cuda;
    cuda.unmarked_twins = executor.unmarked_twins;  // profile_cuda decides by its concurrency
    return cuda::load_cuda_plugin().entry_points->profile(config, *data, repeats, executor.seed, cuda, report,
                                                          concurrent, timing);
  }
  return cpu::profile_cpu(config, *data, repeats, executor.seed, report, concurrent, pinned_cpus(executor),
                         handoff_spin_s(executor), timing, parse_transfer_threads(executor.transfer_threads),
                         takes_unmarked_twins(executor.unmarked_twins, /*on_gpu=*/false, concurrent));
}

Calibration profile_across_ranks(const GraphConfig& config, const ExecutorOptions& executor, int repeats, bool progress,
                                 int concurrent, RankTransport& transport, double wait_s) {
  if (executor.device != "cpu") throw Error("--distributed profiles --device cpu only");
  transport.barrier_within(wait_s);  // the ranks' profiles run at once
  const auto began = std::chrono::steady_clock::now();
  Calibration calibration = profile_device_calibration(config, executor, repeats, progress, concurrent);
  // The others' profiles take about as long as this one's, more where ranks share cores: a rank
  // not done within that and the timeout more has stopped.
  const double profile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  transport.barrier_within(wait_s + profile_s);
  const RankLinkTimes link = time_rank_link(transport, repeats, wait_s);
  if (transport.rank() != 0) return calibration;
  calibration.concurrent = concurrent * transport.ranks();
  calibration.ranks = transport.ranks();
  calibration.message_send_core_s = link.send_core_s;
  calibration.message_send_core_bytes_per_s = link.send_core_bytes_per_s;
  calibration.message_receive_core_s = link.receive_core_s;
  calibration.message_receive_core_bytes_per_s = link.receive_core_bytes_per_s;
  calibration.copy_latency_s = std::max(0.0, calibration.copy_latency_s) + link.latency_s;
  if (link.bytes_per_s > 0) {
    calibration.core_copy_bytes_per_s = calibration.copy_bytes_per_s;  // one thread's copy, in one process
    calibration.copy_bytes_per_s = link.bytes_per_s;                    // a whole message between ranks
  }
  calibration.device_name += fmt::format(", {} MPI ranks", transport.ranks());
  if (progress) {
    for (std::size_t i = 0; i < link.one_way_s.size(); ++i) {
      const auto& [bytes, seconds] = link.one_way_s[i];
      std::cerr << fmt::format("  message of {} bytes between ranks: {:.1f} us one way; cores: {:.1f} us to send, {:.1f} us to receive\n",
                               bytes, seconds * 1e6, link.send_core_each_s.at(i).second * 1e6, link.receive_core_each_s.at(i).second * 1e6);
    }
  }
  return calibration;
}

}  // namespace pipetwin::cli
