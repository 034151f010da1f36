// The areas of the `_core` extension, one file each (OpenSpiel's layout), and what they share.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/typing.h>

#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/result.hpp"

namespace pipetwin::python {

namespace py = pybind11;

// Python types as the generated stubs (_core.pyi, pybind11-stubgen) show them.
using JsonDict = py::typing::Dict<py::str, py::object>;                            // dict[str, Any]
using JsonDictList = py::typing::List<JsonDict>;                                   // list[dict[str, Any]]
using ParamsArg = py::typing::Optional<                                            // {key: value}, ['key=value'] or None
    py::typing::Union<py::typing::Dict<py::str, py::object>, py::typing::Iterable<py::str>>>;
using ColumnTable = py::typing::Dict<py::str, py::typing::Union<py::array, py::typing::List<py::str>>>;

// A graph as Python holds it (shared by the results made from it).
struct Graph {
  std::shared_ptr<const TaskGraph> graph;
};

// A predicted or measured result, with the graph it belongs to.
struct PyResult {
  std::shared_ptr<const TaskGraph> graph;
  Result result;
};

void bind_errors(py::module_& m);     // module.cpp
void bind_catalog(py::module_& m);    // catalog.cpp: networks, schedules, hardware
void bind_graph(py::module_& m);      // graph.cpp: build_graph, Graph, JSON
void bind_result(py::module_& m);     // result.cpp: Result
void bind_engines(py::module_& m);    // engines.cpp: simulate, evaluate
void bind_executor(py::module_& m);   // executor.cpp: train, profile, validate (CPU)

// {"batch": 64, "cuts": [3, 7]} or ["batch=64"] -> ["batch=64", "cuts=3,7"].
std::vector<std::string> params_from_python(const ParamsArg& params);
// A JSON value as a Python object (dicts, lists, numbers, strings).
py::object to_python(const nlohmann::ordered_json& value);
// The configuration the keyword arguments describe.
GraphConfig graph_config(const std::string& model, const std::string& schedule, const std::string& hardware,
                         int processors, int microbatches, int minibatches, const ParamsArg& params,
                         const std::string& calibration);

}  // namespace pipetwin::python
