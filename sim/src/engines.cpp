// The predicting engines by name.
#include "pipetwin/sim/engines.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/schedule/validator.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif

namespace pipetwin {

std::vector<std::string> engine_names() {
#ifdef PIPETWIN_HAVE_SYSTEMC
  return {"systemc", "analytic"};
#else
  return {"analytic"};
#endif
}

std::string default_engine() { return engine_names().front(); }

void check_engine(const std::string& name) {
  const auto names = engine_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  if (name == "systemc") throw Error("this pipetwin was built without SystemC (install libsystemc-dev and rebuild)");
  if (name == "cpu" || name == "cuda") {
    throw Error("engine " + name + " is an executor: it trains the network for real (pipetwin run/validate --device " + name + ")");
  }
  throw Error(unknown_name_message("engine", name, names));
}

std::unique_ptr<Engine> make_engine(const std::string& name) {
  check_engine(name);
#ifdef PIPETWIN_HAVE_SYSTEMC
  if (name == "systemc") return std::make_unique<SystemcEngine>();
#endif
  return std::make_unique<AnalyticEngine>();
}

Result run_engine(const std::string& name, const TaskGraph& graph, const EngineOptions& options) {
  return make_engine(name)->run(graph, options);
}

Evaluated build_and_run(const std::string& engine, const GraphConfig& config, bool validate,
                        bool record_memory_timeline) {
  return build_and_run(*make_engine(engine), config, validate, record_memory_timeline);
}

Evaluated build_and_run(Engine& engine, const GraphConfig& config, bool validate, bool record_memory_timeline) {
  Evaluated e{make_graph(config), {}};
  if (validate) validate_or_throw(e.graph);
  EngineOptions options;
  options.record_memory_timeline = record_memory_timeline;
  e.result = engine.run(e.graph, options);
  return e;
}

}  // namespace pipetwin
