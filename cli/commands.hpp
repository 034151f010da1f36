// The subcommands of `pipetwin`; each adds itself to the app and runs from its callback.
#pragma once
#include <CLI/CLI.hpp>

namespace pipetwin::cli {

// Thrown by a command that has nothing to print but must exit with `code` (say, an MPI rank whose
// error rank 0 reports).
struct QuietExit {
  int code = 0;
};

void add_list_commands(CLI::App& app);      // models, schedules, hardware
void add_schedule_command(CLI::App& app);   // schedule -> graph.json / graph.dot
void add_timing_commands(CLI::App& app);    // evaluate (analytic), simulate (SystemC)
void add_show_command(CLI::App& app);       // show -> ASCII space-time diagram
void add_sweep_command(CLI::App& app);      // sweep -> schedules x processor counts, in parallel
void add_search_command(CLI::App& app);     // search -> the best t x p x d, microbatch and schedule
void add_import_command(CLI::App& app);     // import-schedule -> a PyTorch schedule CSV as a graph
void add_devices_command(CLI::App& app);
void add_run_command(CLI::App& app);        // run -> train under a schedule on an executor, measured
void add_profile_command(CLI::App& app);    // profile -> a calibration table
void add_kernels_command(CLI::App& app);    // kernels -> the operator model's GPU kernels per layer
void add_validate_command(CLI::App& app);   // validate -> predicted against measured    // devices -> CPU cores and CUDA devices

}  // namespace pipetwin::cli
