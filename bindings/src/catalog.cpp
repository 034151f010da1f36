// What can be built, by name: networks, schedules, hardware profiles (with their parameters).
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network_registry.hpp"

namespace pipetwin::python {
namespace {

JsonDictList param_list(const std::vector<ParamSpec>& specs) {
  JsonDictList out;
  for (const auto& s : specs) {
    py::dict d;
    d["name"] = s.name;
    d["default"] = s.default_value;
    d["description"] = s.description;
    out.append(d);
  }
  return out;
}

// Name, description and parameters of each registry entry (networks, hardware).
template <typename Entry>
JsonDictList entry_list(const std::vector<Entry>& entries) {
  JsonDictList out;
  for (const auto& e : entries) {
    py::dict d;
    d["name"] = e.name;
    d["description"] = e.description;
    d["params"] = param_list(e.params);
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_catalog(py::module_& m) {
  m.def("networks", [] { return entry_list(network_entries()); },
        "The built-in networks: name, description and parameters of each.");
  m.def("schedules", [] {
    JsonDictList out;
    for (const auto& e : schedule_entries()) {
      py::dict d;
      d["name"] = e.name;
      d["description"] = e.description;
      d["semantics"] = to_string(e.semantics);
      d["params"] = param_list(e.params);
      d["standalone"] = e.standalone;
      out.append(d);
    }
    return out;
  }, "The registered schedules: name, description, weight semantics and parameters of each.");
  m.def("hardware", [] { return entry_list(hardware_entries()); },
        "The built-in hardware profiles: name, description and parameters of each.");
  m.def("network_layers", [](const std::string& model, const ParamsArg& params) {
    GraphConfig config = graph_config(model, "sequential", "unit", 1, 1, 1, params, "");
    const Network net = make_request(config).network;
    JsonDictList out;
    for (const auto& l : net.layers) {
      py::dict d;
      d["name"] = l.name;
      d["type"] = l.type;
      d["input_shape"] = l.input_shape;
      d["output_shape"] = l.output_shape;
      d["forward_flops"] = l.forward_flops;
      d["parameters"] = l.parameters;
      d["output_bytes"] = l.output_bytes;
      out.append(d);
    }
    return out;
  }, py::arg("model"), py::arg("params") = py::none(),
     "The layers of a network (model parameters such as batch may be given): shapes, FLOPs, parameters.");
}

}  // namespace pipetwin::python
