// Shared graph options and the --procs list syntax.
#include "graph_options.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <thread>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/params.hpp"

namespace pipetwin::cli {

void add_graph_options(CLI::App& command, GraphOptions& options, const std::string& default_procs,
                       ProcessorCounts counts) {
  options.procs = default_procs;
  command.add_option("--model,-m", options.config.model,
                     "network: a name from `pipetwin models`, or a network file ending in .json")
      ->capture_default_str();
  command.add_option("--schedule,-s", options.config.schedule, "schedule from `pipetwin schedules`")
      ->capture_default_str();
  command.add_option("--hardware", options.config.hardware,
                     "hardware profile from `pipetwin hardware`, or a profile file ending in .json")
      ->capture_default_str();
  command.add_option("--procs,-p", options.procs,
                     counts == ProcessorCounts::list ? "processor count, or a list such as 1-9 or 1,2,4,8"
                                                     : "processor count")
      ->capture_default_str();
  command.add_option("--microbatches", options.config.microbatches,
                     "microbatches per minibatch (the minibatch of `batch` samples is split evenly)")
      ->capture_default_str();
  command.add_option("--minibatches", options.config.minibatches,
                     "minibatches (optimizer steps) to schedule")
      ->capture_default_str();
  command.add_option("--param", options.config.params,
                     "key=value for the model, hardware or schedule (repeatable), e.g. batch=64, "
                     "precision=tf32, cuts=18,36; prefix with model./hardware./schedule. if ambiguous")
      ->take_all();
  command.add_option("--calibration", options.config.calibration_file,
                     "calibration table from `pipetwin profile`: measured task times replace the "
                     "hardware profile's roofline")
      ->check(CLI::ExistingFile);
}

std::string describe_config(const GraphConfig& config) {
  std::string text = config.schedule + " at P = " + std::to_string(config.processors) + ", " +
                     std::to_string(config.microbatches) + " microbatches";
  if (!config.params.empty()) {
    text += " (";
    for (std::size_t i = 0; i < config.params.size(); ++i) text += (i ? " " : "") + config.params[i];
    text += ")";
  }
  return text;
}

std::vector<std::string> parse_schedule_list(const std::string& text) {
  if (text == "all") return standalone_schedule_names();
  std::vector<std::string> names;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) throw Error("--schedules: empty name in '" + text + "'");
    find_schedule(name);  // throws with a suggestion
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw Error("--schedules: " + name + " is given twice in '" + text + "'");
    }
    names.push_back(name);
  }
  if (names.empty()) throw Error("--schedules: give at least one schedule");
  return names;
}

std::vector<int> parse_count_list(const std::string& text, const std::string& option, const std::string& what,
                                  int most) {
  std::vector<int> counts;
  std::set<int> seen;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const std::size_t dash = item.find('-', 1);
    const std::int64_t low = parse_int(item.substr(0, dash), option);
    const std::int64_t high = dash == std::string::npos ? low : parse_int(item.substr(dash + 1), option);
    if (low < 1) throw Error(option + ": " + what + " must be at least 1, got " + std::to_string(low));
    if (high < low) throw Error(option + ": range " + item + " is empty");
    if (high > most) {
      throw Error(option + ": " + what + " must be at most " + std::to_string(most) + ", got " + std::to_string(high));
    }
    for (std::int64_t count = low; count <= high; ++count) {
      if (!seen.insert(static_cast<int>(count)).second) {
        throw Error(option + ": " + std::to_string(count) + " is given twice in '" + text + "'");
      }
      counts.push_back(static_cast<int>(count));
    }
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return counts;
}

std::vector<int> parse_procs(const std::string& text) {
  return parse_count_list(text, "--procs", "processor counts", 4096);
}

void add_jobs_option(CLI::App& command, int& jobs) {
  command.add_option("--jobs,-j", jobs, "worker processes (default, or 0: all cores)")->check(CLI::Range(0, 4096));
}

int worker_count(int jobs) {
  return jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace pipetwin::cli
