// pipetwin._core: the C++ core of the Python package. Errors cross as pipetwin.PipetwinError (a
// ValueError) with the same one-line messages the CLI prints.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::python {

void bind_errors(py::module_& m) {
  static py::exception<Error> error(m, "PipetwinError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // Messages quote what they read (a file's bytes may not be UTF-8): undecodable bytes become
      // U+FFFD instead of a UnicodeDecodeError in place of the message.
      const std::string message = e.what();
      py::object text = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace"));
      PyErr_SetObject(error.ptr(), text.ptr());
    }
  });
}

std::vector<std::string> params_from_python(const ParamsArg& params) {
  std::vector<std::string> items;
  if (params.is_none()) return items;
  auto text = [](const py::handle& value) -> std::string {
    if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      std::string joined;
      for (const auto& item : value) joined += (joined.empty() ? "" : ",") + py::str(item).cast<std::string>();
      return joined;
    }
    return py::str(value).cast<std::string>();
  };
  if (py::isinstance<py::dict>(params)) {
    for (const auto& [key, value] : params.cast<py::dict>()) items.push_back(py::str(key).cast<std::string>() + "=" + text(value));
    return items;
  }
  if (py::isinstance<py::str>(params)) throw Error("params: give a dict {key: value} or a list of 'key=value'");
  for (const auto& item : params) items.push_back(py::str(item).cast<std::string>());
  return items;
}

py::object to_python(const nlohmann::ordered_json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

GraphConfig graph_config(const std::string& model, const std::string& schedule, const std::string& hardware,
                         int processors, int microbatches, int minibatches, const ParamsArg& params,
                         const std::string& calibration) {
  GraphConfig config = pipetwin::graph_config(model, schedule, hardware, processors, microbatches, minibatches);
  config.params = params_from_python(params);
  config.calibration_file = calibration;
  return config;
}

}  // namespace pipetwin::python

PYBIND11_MODULE(_core, m) {
  namespace python = pipetwin::python;
  m.doc() = "pipetwin's C++ core: schedules as task graphs, the SystemC simulator, the CPU executor";
  python::bind_errors(m);
  python::bind_catalog(m);
  python::bind_graph(m);
  python::bind_result(m);
  python::bind_engines(m);
  python::bind_executor(m);
}
