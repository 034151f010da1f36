// Task graphs from Python: build one by name, read and write its JSON, look at its tasks.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin::python {
namespace {

template <typename T, typename Field>
py::array_t<T> column(const TaskGraph& g, Field field) {
  py::array_t<T> out(static_cast<py::ssize_t>(g.tasks.size()));
  auto view = out.template mutable_unchecked<1>();
  for (std::size_t i = 0; i < g.tasks.size(); ++i) view(static_cast<py::ssize_t>(i)) = static_cast<T>(field(g.tasks[i]));
  return out;
}

}  // namespace

ColumnTable task_table(const TaskGraph& g) {
  ColumnTable d;
  d["id"] = column<std::int32_t>(g, [](const Task& t) { return t.id; });
  py::list kinds, placements;
  for (const auto& t : g.tasks) {
    kinds.append(to_string(t.kind));
    placements.append(to_string(t.placement));
  }
  d["kind"] = kinds;
  d["first_layer"] = column<std::int32_t>(g, [](const Task& t) { return t.first_layer; });
  d["last_layer"] = column<std::int32_t>(g, [](const Task& t) { return t.last_layer; });
  d["stage"] = column<std::int32_t>(g, [](const Task& t) { return t.stage; });
  d["minibatch"] = column<std::int32_t>(g, [](const Task& t) { return t.minibatch; });
  d["microbatch"] = column<std::int32_t>(g, [](const Task& t) { return t.microbatch; });
  d["placement"] = placements;
  d["resource"] = column<std::int32_t>(g, [](const Task& t) { return t.resource; });
  d["order"] = column<std::int32_t>(g, [](const Task& t) { return t.order; });
  d["cost_cycles"] = column<std::int64_t>(g, [](const Task& t) { return t.cost_cycles; });
  d["bytes"] = column<std::int64_t>(g, [](const Task& t) { return t.bytes; });
  d["version_read"] = column<std::int32_t>(g, [](const Task& t) { return t.version_read; });
  d["version_written"] = column<std::int32_t>(g, [](const Task& t) { return t.version_written; });
  d["wait_exposed_bytes"] = column<std::int64_t>(g, [](const Task& t) { return t.wait_exposed_bytes; });
  return d;
}

void bind_graph(py::module_& m) {
  py::class_<Graph>(m, "Graph", "A schedule as a task graph: tasks on processors and links, with dependencies, "
                                 "memory effects and weight versions.")
      .def_property_readonly("schedule", [](const Graph& g) { return g.graph->schedule; })
      .def_property_readonly("model", [](const Graph& g) { return g.graph->model; })
      .def_property_readonly("hardware", [](const Graph& g) { return g.graph->hardware; })
      .def_property_readonly("semantics", [](const Graph& g) { return std::string(to_string(g.graph->semantics)); })
      .def_property_readonly("processors", [](const Graph& g) { return g.graph->processor_count(); })
      .def_property_readonly("microbatches", [](const Graph& g) { return g.graph->microbatches; })
      .def_property_readonly("minibatches", [](const Graph& g) { return g.graph->minibatches; })
      .def_property_readonly("samples_per_microbatch", [](const Graph& g) { return g.graph->samples_per_microbatch; })
      .def_property_readonly("clock_hz", [](const Graph& g) { return g.graph->clock_hz; })
      .def_property_readonly("parameters", [](const Graph& g) { return g.graph->parameters; })
      .def_property_readonly("schedule_metrics", [](const Graph& g) { return g.graph->schedule_metrics; })
      .def_property_readonly("wait_loss", [](const Graph& g) {
        py::typing::List<py::typing::Tuple<py::int_, py::float_>> out;
        for (const auto& point : g.graph->wait_loss) out.append(py::make_tuple(point.wait_cycles, point.extra_cycles_per_byte));
        return out;
      }, "What a wait costs a processor's next task: (wait cycles, extra cycles per byte of the task's "
         "wait_exposed_bytes), waits ascending, linear between the points from nothing at no wait (empty: none).")
      .def_property_readonly("stages", [](const Graph& g) {
        py::typing::List<py::typing::Dict<py::str, py::int_>> out;
        for (const auto& s : g.graph->stages) {
          py::dict d;
          d["first_layer"] = s.first_layer;
          d["last_layer"] = s.last_layer;
          d["processor"] = s.processor;
          d["forward_processor"] = s.forward_processor_or_home();
          d["weight_delay"] = s.weight_delay;
          out.append(d);
        }
        return out;
      }, "Per stage: its layers, its home processor, where its forwards run, its weight delay.")
      .def("__len__", [](const Graph& g) { return g.graph->tasks.size(); })
      .def("tasks", [](const Graph& g) { return task_table(*g.graph); },
           "The task table as a dict of columns (numpy arrays; kind and placement as lists of str).")
      .def("to_json", [](const Graph& g) { return graph_to_json(*g.graph); }, "The graph's JSON (lossless).")
      .def("to_dot", [](const Graph& g) { return graph_to_dot(*g.graph); }, "Graphviz DOT.")
      .def("save", [](const Graph& g, const std::string& path) { write_output_file(path, graph_to_json(*g.graph)); },
           py::arg("path"),
           "Writes the graph's JSON to `path`, whole or not at all (through symbolic links; devices are written, "
           "never replaced).")
      .def("problems", [](const Graph& g) { return validate(*g.graph); },
           "What the validator finds wrong (an empty list for a sound graph).")
      .def_static("from_json", [](const std::string& text) {
        return Graph{std::make_shared<const TaskGraph>(graph_from_json(text, "<string>"))};
      }, py::arg("text"), "A graph from its JSON text.")
      .def_static("load", [](const std::string& path) { return Graph{std::make_shared<const TaskGraph>(load_graph(path))}; },
                  py::arg("path"), "A graph from a JSON file (pipetwin schedule -o).")
      .def("__repr__", [](const Graph& g) {
        return "<pipetwin.Graph " + g.graph->schedule + " · " + g.graph->model + " · " + g.graph->hardware + " · P=" +
               std::to_string(g.graph->processor_count()) + " · " + std::to_string(g.graph->tasks.size()) + " tasks>";
      });

  m.def("build_graph",
        [](const std::string& model, const std::string& schedule, const std::string& hardware, int processors,
           int microbatches, int minibatches, const ParamsArg& params, const std::string& calibration,
           bool drop_other_schedules_params) {
          GraphConfig config =
              graph_config(model, schedule, hardware, processors, microbatches, minibatches, params, calibration);
          if (drop_other_schedules_params) config = without_other_schedules_params(config);
          TaskGraph graph = make_graph(config);
          validate_or_throw(graph);
          return Graph{std::make_shared<const TaskGraph>(std::move(graph))};
        },
        py::arg("model") = "resnet56", py::arg("schedule") = "1f1b", py::arg("hardware") = "h100",
        py::arg("processors") = 1, py::arg("microbatches") = 8, py::arg("minibatches") = 2,
        py::arg("params") = py::none(), py::arg("calibration") = "", py::arg("drop_other_schedules_params") = false,
        "Builds and validates a schedule's task graph. `params`: {key: value} for the model, hardware or "
        "schedule (as --param on the CLI); `calibration`: a table from profile(); "
        "`drop_other_schedules_params`: ignore parameters only other schedules take (as sweeps do).");
}

}  // namespace pipetwin::python
