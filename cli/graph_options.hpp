// The options every graph-building command shares (--model, --schedule, --procs, ...), and the
// processor-count list syntax "4", "1-9", "1,2,4-8".
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cli {

struct GraphOptions {
  GraphConfig config;
  std::string procs = "1";
};

// How many processor counts a command's --procs takes: one (run, schedule, show) or a list.
enum class ProcessorCounts { one, list };

// Adds the options to `command`, with `default_procs` as the --procs default.
void add_graph_options(CLI::App& command, GraphOptions& options, const std::string& default_procs,
                       ProcessorCounts counts);

// "1-9" -> 1..9, "1,2,4-8" -> 1,2,4,5,6,7,8; throws, naming `option` and `what` the counts are,
// on anything else, on a count under 1 or over `most`, and on a count given twice.
std::vector<int> parse_count_list(const std::string& text, const std::string& option, const std::string& what,
                                  int most);

// parse_count_list for --procs: processor counts, at most 4096.
std::vector<int> parse_procs(const std::string& text);

// One configuration of a sweep or search in words: "gpipe at P = 4, 8 microbatches (tp=2 dp=2)".
std::string describe_config(const GraphConfig& config);

// "gpipe,1f1b" -> the names, each checked (with a suggestion when unknown); "all" -> every
// standalone schedule.
std::vector<std::string> parse_schedule_list(const std::string& text);

// The --jobs,-j option of the commands that run worker processes (sweep, search): 0 to 4096.
void add_jobs_option(CLI::App& command, int& jobs);

// The workers --jobs asks for: itself, or with 0 one per core.
int worker_count(int jobs);

}  // namespace pipetwin::cli
