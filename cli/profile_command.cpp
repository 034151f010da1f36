// `pipetwin profile --device cpu|cuda`: times F, BA, BW, B and U of every layer on one processor (a
// CPU thread, or one SM partition / GPU / stream as --placement says), the executor's cost per
// task and its copy bandwidth, and writes the calibration table that
// `--calibration` feeds to evaluate / simulate / sweep / validate. With --distributed (under
// mpirun), every rank profiles at once, as the ranks of a run do, and the table's transfers are
// messages between ranks 0 and 1, timed.
#include <cmath>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "commands.hpp"
#include "executor_setup.hpp"
#include "pipetwin/exec/mpi/mpi_ranks.hpp"
#include "pipetwin/models/output_file.hpp"
#include "profile_calibration.hpp"
#include "rank_followers.hpp"
#include "pipetwin/models/error.hpp"
#include "table.hpp"
#include "output_option.hpp"

namespace pipetwin::cli {
namespace {

struct ProfileCommandOptions {
  GraphConfig config;
  ExecutorOptions executor;
  int repeats = kDefaultProfileRepeats;
  int concurrent = 1;
  std::string concurrent_timing = "pipeline";
  std::string output;
  bool quiet = false;
  bool distributed = false;
  double message_timeout_s = 60;
};

void run(const ProfileCommandOptions& options, mpi::MpiSession* session) {
  check_device(options.executor.device);
  if (session != nullptr && options.executor.device != "cpu") throw Error("--distributed profiles --device cpu only");
  if (session != nullptr && session->ranks() < 2) throw Error("--distributed: start at least 2 ranks (mpirun -np 2)");
  if (session != nullptr) checked_message_timeout_s(options.message_timeout_s);
  if (session != nullptr && options.concurrent != 1) {
    throw Error("--distributed: the ranks profile at once already (one copy each); leave out --concurrent");
  }
  const bool rank0 = session == nullptr || session->rank() == 0;
  GraphConfig config = options.config;
  default_hardware_for_device(options.executor, config.hardware);
  if (config.microbatches < 1) throw Error("--microbatches must be at least 1");
  const ScheduleRequest request = make_request(config);
  const std::string output = options.output.empty() ? "calibration-" + request.network.name + "-" + options.executor.device + ".json" : options.output;
  const Calibration calibration =
      session != nullptr
          ? profile_across_ranks(config, options.executor, options.repeats, !options.quiet && rank0, 1, session->transport(),
                                 options.message_timeout_s)
          : profile_device_calibration(config, options.executor, options.repeats, !options.quiet, options.concurrent,
                                       cpu::parse_concurrent_timing(options.concurrent_timing));
  if (!rank0) return;
  const double us = 1e6;
  // A forward alone in its task (forward_one_layer_s), and a BW's dW alone in its task
  // (weight_grad_dw_one_layer_s). The way back to the
  // linear output the first time through (LayerTimes::to_linear_s), by a BA part the first time
  // (one processor's tables), taken again right after by a BA part and by a BW
  // (warm_to_linear.hpp), what a BA part's dx costs whatever its samples
  // (activation_grad_fixed_s) and the dx of a whole microbatch by such parts
  // (activation_grad_dx_one_layer_s), and the gradient at its output assembled from the next
  // layer's BA parts (assembly_s): "-" where the table cannot tell.
  Table table({"layer", "F_us", "F_alone_us", "BA_us", "BW_us", "BW_dW_alone_us", "B_us", "U_us", "to_linear_us",
               "BA_first_us", "BA_again_us", "BW_again_us", "BA_fixed_us", "BA_dx_alone_us", "assembly_us"});
  const auto or_dash = [&](double seconds) { return seconds >= 0 ? fmt::format("{:.1f}", seconds * us) : std::string("-"); };
  for (const auto& layer : request.network.layers) {
    const LayerTimes& t = calibration.layers.at(layer.name);
    table.add_row({layer.name, fmt::format("{:.1f}", t.forward_s * us), or_dash(t.forward_one_layer_s),
                   fmt::format("{:.1f}", t.activation_grad_s * us), fmt::format("{:.1f}", t.weight_grad_s * us),
                   or_dash(t.weight_grad_dw_one_layer_s), or_dash(t.backward_s), fmt::format("{:.1f}", t.update_s * us),
                   or_dash(t.to_linear_s()), or_dash(t.activation_grad_to_linear_one_layer_s),
                   or_dash(t.activation_grad_to_linear_again_s),
                   or_dash(t.weight_grad_to_linear_again_s), or_dash(t.activation_grad_fixed_s),
                   or_dash(t.activation_grad_dx_one_layer_s), or_dash(t.assembly_s)});
  }
  std::cout << fmt::format("{} · {} samples per task · {}\n", request.network.name, calibration.samples, calibration.device_name);
  table.print(std::cout);
  std::cout << fmt::format("overhead {:.1f} us per task + {:.1f} us per layer in it{}", calibration.task_overhead_s * us,
                           calibration.layer_overhead_s * us,
                           calibration.overheads_from_unmarked_twins ? " (from unmarked twin runs)" : "");
  if (!calibration.kind_overhead_s.empty()) {
    std::cout << " (per task by kind:";
    for (const auto& [kind, seconds] : calibration.kind_overhead_s) std::cout << fmt::format(" {} {:.1f}", to_string(kind), seconds * us);
    std::cout << ")";
  }
  if (!calibration.stage_kind_overhead_s.empty()) {
    std::cout << " (split tasks over a stage:";
    for (const auto& [kind, seconds] : calibration.stage_kind_overhead_s) {
      std::cout << fmt::format(" {} {:.1f}", to_string(kind), seconds * us);
    }
    std::cout << ")";
  }
  if (calibration.input_load_s > 0) std::cout << fmt::format(" · input load {:.1f} us per microbatch", calibration.input_load_s * us);
  if (calibration.task_gap_s >= 0) std::cout << fmt::format(" · {:.2f} us between tasks", calibration.task_gap_s * us);
  if (calibration.task_time_spread >= 0) {
    std::cout << fmt::format(" · tasks {:.1f}% off their like's median (the median task)", calibration.task_time_spread * 100);
  }
  std::cout << fmt::format(" · copy bandwidth {:.2f} GB/s · transfer latency {:.1f} us", calibration.copy_bytes_per_s / 1e9,
                           calibration.copy_latency_s * us);
  if (calibration.handoff_s >= 0) {
    std::cout << fmt::format(calibration.device == "cpu" ? " ({:.1f} us copied by its sender)" : " (of which two handoffs of {:.1f} us)",
                             calibration.handoff_s * us);
    if (calibration.handoff_spin_s > 0) std::cout << fmt::format(", threads spinning {:.0f} us", calibration.handoff_spin_s * us);
  }
  std::cout << "\n";
  if (calibration.co_run_slope >= 0) {
    std::cout << fmt::format("co-run: layers {:+.1f}% slower per unit of the other processors' busy share of their task, "
                             "timed at a mean share of {:.2f} (validate scales the table by each row's overlap)\n",
                             100 * calibration.co_run_slope, calibration.co_run_share);
  }
  if (calibration.footprint_slowdown >= 0) {
    std::cout << fmt::format("footprint: forwards and backwards {:+.1f}% slower holding {} (one-processor gpipe, every "
                             "microbatch's stash) than {} (sequential); validate scales each row's table by the bytes "
                             "its graph holds\n",
                             100 * calibration.footprint_slowdown, human_bytes(calibration.footprint_large_bytes),
                             human_bytes(calibration.footprint_small_bytes));
  }
  if (calibration.far_stash_distance_bytes > 0) {
    // One figure per timed distance: a processor's layers share it.
    std::map<double, std::pair<double, double>> by_distance;
    for (const auto& [name, times] : calibration.layers) {
      if (times.far_forward_factor >= 1) by_distance[times.timed_stash_distance_bytes] = {times.far_forward_factor, times.far_backward_factor};
    }
    std::cout << fmt::format("stashes: with every stash held ({} one-processor gpipe runs at once, {} between a stash and its "
                             "read)",
                             calibration.concurrent, human_bytes(calibration.far_stash_distance_bytes));
    const char* separator = " ";
    for (const auto& [distance, factors] : by_distance) {
      std::cout << fmt::format("{}forwards {:+.1f}% and backwards {:+.1f}% where the pipeline held them {}", separator,
                               100 * (factors.first - 1), 100 * (factors.second - 1),
                               human_bytes(static_cast<std::int64_t>(std::llround(std::max(0.0, distance)))));
      separator = ", ";
    }
    std::cout << "; validate moves each row's layers toward that by how much longer its stashes wait (docs/executor.md, "
                 "Calibration 10)\n";
  }
  if (!calibration.reuse_extra_s_per_byte.empty()) {
    // The curve at about six working sets, its last one included.
    std::cout << "reuse: a re-read costs beyond a cached one, by the data touched since:";
    const auto& curve = calibration.reuse_extra_s_per_byte;
    const std::size_t step = std::max<std::size_t>(1, curve.size() / 5);
    for (std::size_t i = 0; i < curve.size(); i += step) {
      if (i + step >= curve.size()) i = curve.size() - 1;
      std::cout << fmt::format(" {} {:.1f} ps/B", human_bytes(curve[i].first), curve[i].second * 1e12);
    }
    std::cout << "; each task's weights are priced by that against the table's order (docs/executor.md, Calibration 8)\n";
  }
  if (!calibration.wait_curve.extra_s_per_byte.empty()) {
    std::cout << "waits: the work after a wait costs more, per byte it touches:";
    for (const auto& [wait_s, s_per_byte] : calibration.wait_curve.extra_s_per_byte) {
      std::cout << fmt::format(" {:g} ms {:.1f} ps/B", wait_s * 1e3, s_per_byte * 1e12);
    }
    if (calibration.wait_curve.footprint_bytes > 0) {
      std::cout << fmt::format(" (measured over {:.0f} MiB: no task is charged for more bytes)",
                               static_cast<double>(calibration.wait_curve.footprint_bytes) / (1 << 20));
    }
    std::cout << "; both engines charge each task for the wait before it (docs/executor.md, \"Waits that cost the caches\")\n";
  }
  if (!calibration.copy_seconds.empty()) {
    std::cout << "copies:";
    for (const auto& [bytes, seconds] : calibration.copy_seconds) {
      std::cout << fmt::format(" {} KiB {:.1f} us ({:.1f} GB/s)", bytes >> 10, seconds * us, static_cast<double>(bytes) / seconds / 1e9);
    }
    std::cout << "\n";
  }
  if (!calibration.pipeline_copy_seconds.empty()) {
    std::cout << "copies made by their senders in the " << calibration.pipeline_schedule << " run:";
    for (const auto& [bytes, seconds] : calibration.pipeline_copy_seconds) {
      std::cout << fmt::format(" {} KiB {:.2f} us", static_cast<double>(bytes) / 1024, seconds * us);
    }
    std::cout << fmt::format(" (a copy of another size: the one above plus {:.2f} us)\n", calibration.pipeline_copy_extra_s() * us);
  }
  if (calibration.cores > 0) {
    const std::string graphs = calibration.cores == 1 ? "1 CPU: in every graph"
                                                      : fmt::format("{} CPUs: in graphs of {} or more processors",
                                                                    calibration.cores, calibration.cores);
    std::cout << graphs << " (a compute thread on every core) the sending processor's thread makes its transfers' "
                           "copies and pays for them\n";
  }
  write_output_file(output, calibration_to_json_text(calibration));
  std::cout << "wrote " << output << " (use it with --calibration)\n";
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto options = std::make_shared<ProfileCommandOptions>();
  options->config.model = "lenet5";
  options->config.hardware = "cpu-core";
  options->config.microbatches = 4;
  auto* command = app.add_subcommand(
      "profile", "time every task kind of every layer on one processor and write a calibration table");
  command->add_option("--model,-m", options->config.model, "network from `pipetwin models`")->capture_default_str();
  command->add_option("--microbatches", options->config.microbatches,
                      "microbatches per minibatch: tasks are timed on batch / microbatches samples")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model, e.g. batch=64")->take_all();
  add_executor_options(*command, options->executor, false);
  command->add_option("--repeats", options->repeats, "timings per task kind and layer: microbatches run (their mean is kept: the median of 8 blocks' means, robust to stalls); at least: a CPU's one-processor table is timed over 100 ms or more of steps")
      ->capture_default_str();
  command->add_option("--concurrent", options->concurrent,
                      "the table for a pipeline of this many processors, which slow each other down (cpu: one thread "
                      "each; shared caches and memory bandwidth, all-core clocks. cuda: an SM partition each; the "
                      "host's launches, the GPU's memory and L2), its layers timed as --concurrent-timing says")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  add_concurrent_timing_option(*command, options->concurrent_timing);
  add_unmarked_twins_option(*command, options->executor);
  command->add_option("--output,-o", options->output, "calibration file (default calibration-<model>-<device>.json)")
      ->check(writable_output_file());
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->add_flag("--distributed", options->distributed,
                    "the table for `run --distributed` (start under mpirun -np N, N >= 2): every rank profiles at "
                    "once, and transfers are timed as messages between ranks 0 and 1; rank 0 writes the table");
  command->add_option("--message-timeout", options->message_timeout_s,
                      "--distributed: seconds a rank waits for another (at the profile's start, for its messages) "
                      "before the job ends naming the wait")
      ->capture_default_str();
  command->callback([options] { with_ranks(options->distributed, options->message_timeout_s, [&](mpi::MpiSession* session) { run(*options, session); }); });
}

}  // namespace pipetwin::cli
