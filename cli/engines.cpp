// Engine selection for the CLI.
#include "engines.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/validator.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif

namespace pipetwin::cli {

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
  throw Error(unknown_name_message("engine", name, names));
}

Result run_engine(const std::string& engine, const TaskGraph& graph, bool record_memory_timeline) {
  check_engine(engine);
#ifdef PIPETWIN_HAVE_SYSTEMC
  if (engine == "systemc") return simulate(graph, SimOptions{record_memory_timeline});
#endif
  return evaluate(graph, record_memory_timeline);
}

Evaluated build_and_run(const std::string& engine, const GraphConfig& config, bool validate,
                        bool record_memory_timeline) {
  Evaluated e{make_graph(config), {}};
  if (validate) validate_or_throw(e.graph);
  e.result = run_engine(engine, e.graph, record_memory_timeline);
  return e;
}

}  // namespace pipetwin::cli
