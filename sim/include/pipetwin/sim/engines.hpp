// The predicting engines by name, for every front end (CLI, Python, experiments): "systemc" (when
// pipetwin was built with SystemC) and "analytic". The executors ("cpu", "cuda") are engines too
// (exec/), made with the network and data they train on.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

std::vector<std::string> engine_names();     // the predicting engines built in, default first
std::string default_engine();                // systemc when built, else analytic
void check_engine(const std::string& name);  // throws naming the built-in engines
std::unique_ptr<Engine> make_engine(const std::string& name);

Result run_engine(const std::string& name, const TaskGraph& graph, const EngineOptions& options = {});

struct Evaluated {
  TaskGraph graph;
  Result result;
};
// Builds (validating when asked) and runs one configuration, on the engine named or given.
Evaluated build_and_run(const std::string& engine, const GraphConfig& config, bool validate,
                        bool record_memory_timeline = false);
Evaluated build_and_run(Engine& engine, const GraphConfig& config, bool validate, bool record_memory_timeline = false);

}  // namespace pipetwin
