// The engines a CLI command can run a graph with: "analytic" (the evaluator) and "systemc" (the
// simulator, when pipetwin was built with SystemC).
#pragma once
#include <string>
#include <vector>

#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/result.hpp"

namespace pipetwin::cli {

struct Evaluated {
  TaskGraph graph;
  Result result;
};

std::vector<std::string> engine_names();     // those built in
std::string default_engine();                // systemc when built, else analytic
void check_engine(const std::string& name);  // throws naming the built-in engines

Result run_engine(const std::string& engine, const TaskGraph& graph, bool record_memory_timeline);
// Builds (validating when asked) and runs one configuration.
Evaluated build_and_run(const std::string& engine, const GraphConfig& config, bool validate,
                        bool record_memory_timeline = false);

}  // namespace pipetwin::cli
