// The one sweep definition (see sweep.hpp).
#include "pipetwin/sim/sweep.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/repeated.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/sim/engines.hpp"

namespace pipetwin {

const std::vector<std::string>& sweep_columns() {
  static const std::vector<std::string> columns = {
      "model", "hardware", "schedule", "processors", "replicas", "microbatches", "minibatches", "total_cycles", "total_s",
      "iteration_cycles", "iteration_s", "speedup", "mean_utilization", "bubble_fraction",
      "max_peak_memory_bytes", "link_bytes", "out_of_memory", "error"};
  return columns;
}

int checked_sweep_processors(std::int64_t processors) {
  if (processors < 1 || processors > 4096) {
    throw Error("sweep: processor counts must be 1 to 4096, got " + std::to_string(processors));
  }
  return static_cast<int>(processors);
}

std::vector<GraphConfig> sweep_configs(const SweepRequest& request) {
  for (const auto& name : request.schedules) find_schedule(name);
  if (!request.baseline.empty()) find_schedule(request.baseline);
  if (request.schedules.empty()) throw Error("sweep: no schedules given");
  if (request.processors.empty()) throw Error("sweep: no processor counts given");
  for (const int p : request.processors) checked_sweep_processors(p);
  // A name or count twice would give the same rows twice: a slip, said rather than repeated.
  if (const auto* twice = first_repeated(request.schedules)) throw Error("sweep: schedule " + *twice + " is given twice");
  if (const auto* twice = first_repeated(request.processors)) {
    throw Error("sweep: processor count " + std::to_string(*twice) + " is given twice");
  }
  std::vector<GraphConfig> configs;
  auto add = [&](const std::string& schedule, int processors) {
    GraphConfig config = request.base;
    config.schedule = schedule;
    config.processors = processors;
    configs.push_back(without_other_schedules_params(config));
  };
  for (const auto& schedule : request.schedules) {
    for (const int p : request.processors) add(schedule, p);
  }
  if (!request.baseline.empty()) {  // one replica of the baseline
    GraphConfig baseline = single_replica(request.base);
    baseline.schedule = request.baseline;
    baseline.processors = 1;
    configs.push_back(without_other_schedules_params(baseline));
  }
  return configs;
}

nlohmann::ordered_json sweep_row(const std::string& engine, const GraphConfig& config) {
  nlohmann::ordered_json row;
  for (const auto& column : sweep_columns()) row[column] = nullptr;
  row["model"] = config.model;
  row["hardware"] = config.hardware;
  row["schedule"] = config.schedule;
  row["processors"] = config.processors;
  row["microbatches"] = config.microbatches;
  row["minibatches"] = config.minibatches;
  row["error"] = "";
  try {
    const Evaluated e = build_and_run(engine, config, false);
    const Result& r = e.result;
    row["replicas"] = graph_replicas(e.graph);
    row["total_cycles"] = r.total_cycles;
    row["total_s"] = r.total_s;
    row["iteration_cycles"] = r.iteration_cycles;
    row["iteration_s"] = r.iteration_s;
    row["mean_utilization"] = r.mean_utilization;
    row["bubble_fraction"] = r.bubble_fraction;
    std::int64_t peak = 0, link_bytes = 0;
    for (const auto bytes : r.peak_memory_bytes) peak = std::max(peak, bytes);
    for (const auto bytes : r.link_bytes) link_bytes += bytes;
    row["max_peak_memory_bytes"] = peak;
    row["link_bytes"] = link_bytes;
    row["out_of_memory"] = r.out_of_memory.empty() ? "" : describe_out_of_memory(e.graph, r.out_of_memory.front());
  } catch (const std::exception& error) {
    row["error"] = error.what();
  }
  return row;
}

std::vector<nlohmann::ordered_json> finish_sweep(const SweepRequest& request, std::vector<nlohmann::ordered_json> rows) {
  double baseline_s = 0;
  if (!request.baseline.empty()) {
    if (rows.empty()) throw Error("internal: a sweep without its baseline row");
    const nlohmann::ordered_json baseline = rows.back();
    rows.pop_back();
    if (!baseline.at("error").get<std::string>().empty()) {
      throw Error("baseline " + request.baseline + " at P=1: " + baseline.at("error").get<std::string>());
    }
    baseline_s = baseline.at("iteration_s").get<double>();
  }
  for (auto& row : rows) {
    if (baseline_s > 0 && row.at("error").get<std::string>().empty() && row.at("iteration_s").get<double>() > 0) {
      // A row of d replicas trains d times the baseline's samples per iteration.
      const double replicas = row.at("replicas").is_null() ? 1.0 : row.at("replicas").get<double>();
      row["speedup"] = replicas * baseline_s / row.at("iteration_s").get<double>();
    }
  }
  return rows;
}

}  // namespace pipetwin
