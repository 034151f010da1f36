// Results, predicted or measured: summary attributes, to_dict() (the CLI's --json), per-task times
// and memory over time as numpy arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/views.hpp"

namespace pipetwin::python {

ColumnTable task_table(const TaskGraph& g);  // graph.cpp

namespace {

using Timeline = py::typing::Dict<py::str, py::array_t<std::int64_t>>;  // time_cycles, bytes

Timeline timeline(const std::vector<MemoryPoint>& points) {
  py::array_t<std::int64_t> time(static_cast<py::ssize_t>(points.size())), bytes(static_cast<py::ssize_t>(points.size()));
  auto t = time.mutable_unchecked<1>();
  auto b = bytes.mutable_unchecked<1>();
  for (std::size_t i = 0; i < points.size(); ++i) {
    t(static_cast<py::ssize_t>(i)) = points[i].time_cycles;
    b(static_cast<py::ssize_t>(i)) = points[i].bytes;
  }
  Timeline d;
  d["time_cycles"] = time;
  d["bytes"] = bytes;
  return d;
}

}  // namespace

void bind_result(py::module_& m) {
  py::class_<PyResult>(m, "Result", "What an engine reports for a graph, predicted (analytic, systemc) or measured "
                                     "(cpu): one schema for all.")
      .def_property_readonly("engine", [](const PyResult& r) { return r.result.engine; })
      .def_property_readonly("graph", [](const PyResult& r) { return Graph{r.graph}; })
      .def_property_readonly("total_cycles", [](const PyResult& r) { return r.result.total_cycles; })
      .def_property_readonly("total_s", [](const PyResult& r) { return r.result.total_s; })
      .def_property_readonly("iteration_cycles", [](const PyResult& r) { return r.result.iteration_cycles; },
                             "Steady-state cycles per minibatch.")
      .def_property_readonly("iteration_s", [](const PyResult& r) { return r.result.iteration_s; },
                             "Steady-state seconds per minibatch (the step time).")
      .def_property_readonly("busy_cycles", [](const PyResult& r) { return r.result.busy_cycles; })
      .def_property_readonly("utilization", [](const PyResult& r) { return r.result.utilization; })
      .def_property_readonly("mean_utilization", [](const PyResult& r) { return r.result.mean_utilization; })
      .def_property_readonly("bubble_fraction", [](const PyResult& r) { return r.result.bubble_fraction; })
      .def_property_readonly("peak_memory_bytes", [](const PyResult& r) { return r.result.peak_memory_bytes; })
      .def_property_readonly("step_peak_memory_bytes", [](const PyResult& r) { return r.result.step_peak_memory_bytes; },
                             "per processor: a steady-state minibatch's peak, the median over the run's second half")
      .def_property_readonly("step_compute_peak_memory_bytes",
                             [](const PyResult& r) { return r.result.step_compute_peak_memory_bytes; },
                             "per processor: the same of the bytes held while tasks other than updates run")
      .def_property_readonly("host_peak_memory_bytes", [](const PyResult& r) { return r.result.host_peak_memory_bytes; })
      .def_property_readonly("link_bytes", [](const PyResult& r) { return r.result.link_bytes; })
      .def_property_readonly("link_utilization", [](const PyResult& r) { return r.result.link_utilization; })
      .def_property_readonly("out_of_memory", [](const PyResult& r) {
        std::vector<std::string> events;
        for (const auto& e : r.result.out_of_memory) events.push_back(describe_out_of_memory(*r.graph, e));
        return events;
      }, "One line per processor (and host) whose live memory crossed its capacity.")
      .def("to_dict", [](const PyResult& r, bool task_times) {
        return JsonDict(to_python(result_to_json(*r.graph, r.result, task_times)));
      }, py::arg("task_times") = false, "The summary as `pipetwin simulate --json` prints it.")
      .def("task_times", [](const PyResult& r) {
        ColumnTable d = task_table(*r.graph);
        const auto n = static_cast<py::ssize_t>(r.result.tasks.size());
        py::array_t<std::int64_t> start(n), end(n);
        auto s = start.mutable_unchecked<1>();
        auto e = end.mutable_unchecked<1>();
        for (py::ssize_t i = 0; i < n; ++i) {
          s(i) = r.result.tasks[static_cast<std::size_t>(i)].start_cycles;
          e(i) = r.result.tasks[static_cast<std::size_t>(i)].end_cycles;
        }
        d["start_cycles"] = start;
        d["end_cycles"] = end;
        return d;
      }, "The task table with start_cycles and end_cycles: a dict of columns (numpy arrays).")
      .def("memory_timeline", [](const PyResult& r) {
        py::typing::List<Timeline> out;
        for (const auto& points : r.result.memory_timeline) out.append(timeline(points));
        return out;
      }, "Per processor, live bytes over time (recorded when the run asked for it).")
      .def("chrome_trace", [](const PyResult& r) { return chrome_trace_json(*r.graph, r.result); },
           "A Chrome trace (Perfetto) of the run, as JSON text.")
      .def("space_time_diagram", [](const PyResult& r, int width) { return space_time_diagram(*r.graph, r.result, width); },
           py::arg("width") = 100, "The ASCII space-time diagram `pipetwin show` prints.")
      .def("__repr__", [](const PyResult& r) {
        return "<pipetwin.Result " + r.result.engine + " · " + r.graph->schedule + " · P=" +
               std::to_string(r.graph->processor_count()) + " · step " + std::to_string(r.result.iteration_s) + " s>";
      });
  // After the class, so that the signature names pipetwin._core.Result.
  m.def("chrome_trace", [](const std::vector<PyResult>& results) {
    if (results.empty()) throw Error("chrome_trace: give at least one result");
    const TaskGraph& graph = *results.front().graph;
    std::string graph_text;  // serialized only when a result holds another copy of a graph
    std::vector<const Result*> all;
    for (const auto& r : results) {
      if (r.graph.get() != &graph) {
        if (graph_text.empty()) graph_text = graph_to_json(graph);
        if (graph_to_json(*r.graph) != graph_text) {
          throw Error("chrome_trace: the results are of different graphs; overlay results of one graph");
        }
      }
      all.push_back(&r.result);
    }
    return chrome_trace_json(graph, all);
  }, py::arg("results"),
        "One Chrome trace of several results of one graph (a prediction and a measurement), each in processes "
        "of its own, to overlay in Perfetto.");
}

}  // namespace pipetwin::python
