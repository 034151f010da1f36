// The `pipetwin` command: predicts and measures pipelined backpropagation schedules.
// Errors become one line on stderr and a non-zero exit (2 for bad input, 1 for anything else).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "pipetwin/exec/host_allocator.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "terminal_text.hpp"

namespace {

// Under mpirun or srun with --distributed every rank parses the same command line, so a mistake in
// it (or --help) is said by rank 0 alone. Before MPI starts, a rank is known from its launcher's
// variables (Open MPI, PMIx, MPICH's PMI, Slurm).
bool quiet_rank(int argc, char** argv) {
  bool distributed = false;
  for (int i = 1; i < argc; ++i) distributed = distributed || std::string(argv[i]) == "--distributed";
  if (!distributed) return false;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* rank = std::getenv(name)) return std::string(rank) != "0";
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  pipetwin::keep_freed_host_memory();  // the executors' buffers reused, not unmapped and faulted in again
  CLI::App app{
      "pipetwin: build pipelined-backpropagation schedules (GPipe, 1F1B, PipeDream, ...) as task "
      "graphs and predict their cycles, utilization, bubbles and memory.\n"
      "Start with `pipetwin evaluate` (resnet56, 1f1b, h100, P = 1..9) or `pipetwin models`.",
      "pipetwin"};
  app.set_version_flag("--version", "pipetwin 0.1.0");
  app.require_subcommand(1);
  pipetwin::cli::add_list_commands(app);
  pipetwin::cli::add_schedule_command(app);
  pipetwin::cli::add_timing_commands(app);
  pipetwin::cli::add_show_command(app);
  pipetwin::cli::add_sweep_command(app);
  pipetwin::cli::add_search_command(app);
  pipetwin::cli::add_import_command(app);
  pipetwin::cli::add_devices_command(app);
  pipetwin::cli::add_run_command(app);
  pipetwin::cli::add_profile_command(app);
  pipetwin::cli::add_validate_command(app);
  pipetwin::cli::add_kernels_command(app);
  if (argc < 2) {  // no command: what there is to do (not an error)
    std::cout << app.help();
    return 0;
  }
  const bool quiet = quiet_rank(argc, argv);
  // Name an unknown command (CLI11 would only say that a subcommand is required).
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-') {
    std::vector<std::string> names;
    for (const auto* command : app.get_subcommands({})) names.push_back(command->get_name());
    if (std::find(names.begin(), names.end(), first) == names.end()) {
      if (!quiet) std::cerr << "pipetwin: error: " << pipetwin::cli::printable(pipetwin::unknown_name_message("command", first, names)) << "\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (!quiet) std::cerr << "pipetwin: error: " << pipetwin::cli::printable(e.what()) << " (see pipetwin --help)\n";
    return 2;
  } catch (const pipetwin::cli::QuietExit& e) {
    return e.code;
  } catch (const pipetwin::Error& e) {
    std::cerr << "pipetwin: error: " << pipetwin::cli::printable(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pipetwin: internal error: " << pipetwin::cli::printable(e.what()) << "\n";
    return 1;
  }
  return 0;
}
