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
      d["activation_grad_flops"] = l.activation_grad_flops;
      d["weight_grad_flops"] = l.weight_grad_flops;
      d["parameters"] = l.parameters;
      d["output_bytes"] = l.output_bytes;
      d["stash_bytes"] = l.stash_bytes;
      d["stash_fixed_bytes"] = l.stash_fixed_bytes;  // per microbatch, whatever its samples
      // What the layer computes, for building the same network elsewhere (a PyTorch baseline).
      if (l.type == "conv2d") {
        const Conv2dSpec& c = l.conv2d;
        py::dict spec;
        spec["out_channels"] = c.out_channels;
        spec["kernel"] = c.kernel;
        spec["stride"] = c.stride;
        spec["padding"] = c.padding;
        spec["groups"] = c.groups;
        spec["connections"] = c.connections;
        spec["bias"] = c.bias;
        spec["batch_norm"] = c.batch_norm;
        spec["relu"] = c.relu;
        spec["residual_add"] = c.residual_add;
        spec["pool"] = py::dict(py::arg("kind") = c.pool.kind, py::arg("kernel") = c.pool.kernel,
                                py::arg("stride") = c.pool.stride);
        d["conv2d"] = spec;
      } else if (l.type == "dense") {
        d["dense"] = py::dict(py::arg("out_features") = l.dense.out_features, py::arg("bias") = l.dense.bias,
                              py::arg("relu") = l.dense.relu, py::arg("loss") = l.dense.loss);
      }
      out.append(d);
    }
    return out;
  }, py::arg("model"), py::arg("params") = py::none(),
     "The layers of a network (model parameters such as batch may be given): shapes, FLOPs per sample (forward, "
     "activation gradient, weight gradient), parameters, bytes, and what a conv2d or dense layer computes.");
}

}  // namespace pipetwin::python
