// Running a graph on a predicting engine (the SystemC simulator, when built, or the analytic
// evaluator), the one sweep definition (pipetwin/sim/sweep.hpp) and the parallel-configuration
// search (pipetwin/sim/search.hpp), for _api.py, _sweep.py and _search.py; a step peak over the
// processors' phases (pipetwin/exec/step_peak_over_phases.hpp) with either engine.
// SystemC's kernel is one per process: run_engine() may be called any number of times in one
// process (not from several threads; sweeps use processes).
#include <pybind11/stl.h>

#include <tuple>

#include "bindings.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/step_peak_over_phases.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/sim/engines.hpp"
#include "pipetwin/sim/search.hpp"
#include "pipetwin/sim/sweep.hpp"
#ifdef PIPETWIN_HAVE_SYSTEMC
#include "pipetwin/sim/simulator.hpp"
#endif

namespace pipetwin::python {

void bind_engines(py::module_& m) {
  const auto names = engine_names();
  m.attr("HAVE_SYSTEMC") = std::find(names.begin(), names.end(), "systemc") != names.end();
  m.def("engine_names", &engine_names, "The predicting engines built in, the default first.");
  m.def("run_engine", [](const Graph& graph, const std::string& engine, bool memory_timeline, bool packets,
                         std::int64_t packet_bytes, std::int32_t credits, const std::string& vcd) {
    EngineOptions options;
    options.record_memory_timeline = memory_timeline;
    if (!packets && vcd.empty()) return PyResult{graph.graph, run_engine(engine, *graph.graph, options)};
    if (engine != "systemc") {
      throw Error("packets and vcd are options of the SystemC simulator (engine 'systemc'), not of '" + engine + "'");
    }
#ifdef PIPETWIN_HAVE_SYSTEMC
    SimOptions sim;
    sim.packet_links = packets;
    sim.packet_bytes = packet_bytes;
    sim.packet_credits = credits;
    sim.vcd_path = vcd;
    return PyResult{graph.graph, SystemcEngine(sim).run(*graph.graph, options)};
#else
    check_engine(engine);  // says what to install
    throw Error("this pipetwin was built without SystemC");
#endif
  }, py::arg("graph"), py::arg("engine") = "systemc", py::arg("memory_timeline") = false, py::arg("packets") = false,
     py::arg("packet_bytes") = 4096, py::arg("credits") = 0, py::arg("vcd") = "",
     "Predicts a Result for `graph` with the SystemC simulator or the analytic evaluator; the simulator's links "
     "packet by packet (packets, packet_bytes, credits) and its VCD trace (vcd: a file name ending in .vcd) on request.");
  m.def("step_peak_over_phases", [](const Graph& graph, const std::string& engine, double fraction) {
    const auto predict = [&engine](const TaskGraph& g) { return run_engine(engine, g, EngineOptions{}); };
    return step_peak_over_phases(*graph.graph, predict, max_peak(predict(*graph.graph).step_peak_memory_bytes),
                                 fraction);
  }, py::arg("graph"), py::arg("engine"), py::arg("fraction"),
     "The steady step's peak memory of `graph` (bytes, the largest processor's) as the largest over each processor's "
     "tasks paced `fraction` slower and faster than their price, one at a time, and as priced.");
  m.def("sweep_points", [](const std::vector<std::string>& schedules, const std::vector<std::int64_t>& processors,
                           const std::string& baseline) {
    SweepRequest request;
    request.schedules = schedules;
    for (const std::int64_t p : processors) request.processors.push_back(checked_sweep_processors(p));
    request.baseline = baseline;
    std::vector<std::pair<std::string, int>> points;
    for (const auto& config : sweep_configs(request)) points.emplace_back(config.schedule, config.processors);
    return points;
  }, py::arg("schedules"), py::arg("processors"), py::arg("baseline"),
     "The (schedule, processors) pairs a sweep runs, in order: the baseline at P=1 last.");
  m.def("sweep_row",
        [](const std::string& engine, const std::string& model, const std::string& schedule, const std::string& hardware,
           int processors, int microbatches, int minibatches, const ParamsArg& params, const std::string& calibration) {
          const GraphConfig config = without_other_schedules_params(
              graph_config(model, schedule, hardware, processors, microbatches, minibatches, params, calibration));
          return sweep_row(engine, config).dump();
        },
        py::arg("engine"), py::arg("model"), py::arg("schedule"), py::arg("hardware"), py::arg("processors"),
        py::arg("microbatches"), py::arg("minibatches"), py::arg("params") = py::none(), py::arg("calibration") = "",
        "One sweep configuration run: its row (the sweep's columns) as JSON.");
  m.def("finish_sweep", [](const std::vector<std::string>& rows, const std::string& baseline) {
    SweepRequest request;
    request.baseline = baseline;
    std::vector<nlohmann::ordered_json> parsed;
    for (const auto& row : rows) parsed.push_back(nlohmann::ordered_json::parse(row));
    return nlohmann::ordered_json(finish_sweep(request, std::move(parsed))).dump();
  }, py::arg("rows"), py::arg("baseline"),
     "The rows of sweep_points(), run, in order -> the table as JSON: the baseline's own run removed, speedups in.");
  m.def("sweep_columns", &sweep_columns, "The columns of every sweep row, in order.");
  m.def("search_points",
        [](const std::string& model, const std::string& hardware, int gpus, std::int64_t batch,
           const std::vector<std::string>& schedules, const std::vector<std::int64_t>& microbatch_sizes, int max_tp,
           int minibatches, const ParamsArg& params) {
          SearchRequest request;
          request.base = graph_config(model, "1f1b", hardware, gpus, 1, minibatches, params, "");
          request.gpus = gpus;
          request.global_batch = batch;
          request.schedules = schedules;
          request.microbatch_sizes = microbatch_sizes;
          request.max_tensor_parallel = max_tp;
          std::vector<std::tuple<std::string, int, int, int, std::vector<std::string>>> points;
          for (const auto& c : search_configs(request)) {
            points.emplace_back(c.schedule, c.processors, c.microbatches, c.minibatches, c.params);
          }
          return points;
        },
        py::arg("model"), py::arg("hardware"), py::arg("gpus"), py::arg("batch"), py::arg("schedules"),
        py::arg("microbatch_sizes"), py::arg("max_tp"), py::arg("minibatches"), py::arg("params") = py::none(),
        "The candidates a search runs: (schedule, processors, microbatches, minibatches, params) each.");
  m.def("search_row",
        [](const std::string& engine, const std::string& model, const std::string& schedule, const std::string& hardware,
           int processors, int microbatches, int minibatches, const std::vector<std::string>& params) {
          GraphConfig config = pipetwin::graph_config(model, schedule, hardware, processors, microbatches, minibatches);
          config.params = params;
          return search_row(engine, config).dump();
        },
        py::arg("engine"), py::arg("model"), py::arg("schedule"), py::arg("hardware"), py::arg("processors"),
        py::arg("microbatches"), py::arg("minibatches"), py::arg("params"),
        "One search candidate run: its row (search_columns()) as JSON.");
  m.def("rank_search", [](const std::vector<std::string>& rows) {
    std::vector<nlohmann::ordered_json> parsed;
    for (const auto& row : rows) parsed.push_back(nlohmann::ordered_json::parse(row));
    return nlohmann::ordered_json(rank_search(std::move(parsed))).dump();
  }, py::arg("rows"), "The search's rows, run -> ranked (those that fit first, by iteration time) as JSON.");
  m.def("search_columns", &search_columns, "The columns of every search row, in order.");
}

}  // namespace pipetwin::python
