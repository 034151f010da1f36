// Running a graph on a predicting engine: the SystemC simulator (when built) or the analytic
// evaluator. SystemC's kernel is one per process: simulate() may be called any number of times in
// one process (not from several threads; sweeps use processes).
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif

namespace pipetwin::python {

void bind_engines(py::module_& m) {
#ifdef PIPETWIN_HAVE_SYSTEMC
  m.attr("HAVE_SYSTEMC") = true;
#else
  m.attr("HAVE_SYSTEMC") = false;
#endif
  m.def("run_engine", [](const Graph& graph, const std::string& engine, bool memory_timeline) {
    if (engine == "analytic") return PyResult{graph.graph, evaluate(*graph.graph, memory_timeline)};
    if (engine != "systemc") throw Error("engine must be systemc or analytic, got '" + engine + "'");
#ifdef PIPETWIN_HAVE_SYSTEMC
    return PyResult{graph.graph, simulate(*graph.graph, SimOptions{memory_timeline})};
#else
    throw Error("this pipetwin was built without SystemC (install libsystemc-dev and rebuild); use engine='analytic'");
#endif
  }, py::arg("graph"), py::arg("engine") = "systemc", py::arg("memory_timeline") = false,
     "Predicts a Result for `graph` with the SystemC simulator or the analytic evaluator.");
}

}  // namespace pipetwin::python
