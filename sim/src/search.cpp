// The parallel-configuration search (see search.hpp).
#include "pipetwin/sim/search.hpp"

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/models/repeated.hpp"
#include "pipetwin/sim/sweep.hpp"

namespace pipetwin {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> all;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) all.push_back(k);
  }
  return all;
}

}  // namespace

std::vector<GraphConfig> search_configs(const SearchRequest& request) {
  if (request.gpus < 1 || request.gpus > 4096) throw Error("the GPUs must be 1 to 4096, got " + std::to_string(request.gpus));
  if (request.schedules.empty()) throw Error("search: no schedules to try");
  for (const auto& name : request.schedules) find_schedule(name);
  if (const auto* twice = first_repeated(request.schedules)) throw Error("search: schedule " + *twice + " is given twice");
  if (request.microbatch_sizes.empty()) throw Error("search: no microbatch sizes to try");
  for (const auto b : request.microbatch_sizes) {
    if (b < 1) throw Error("search: microbatch sizes must be at least 1, got " + std::to_string(b));
  }
  if (const auto* twice = first_repeated(request.microbatch_sizes)) {
    throw Error("search: microbatch size " + std::to_string(*twice) + " is given twice");
  }
  // The model and hardware as configured (batch, layers, nodes), for the bounds of t and p.
  const ScheduleRequest probe = make_request(single_replica(request.base));
  const std::int64_t batch = request.global_batch > 0 ? request.global_batch : probe.network.batch;
  int max_t = request.max_tensor_parallel;
  if (max_t <= 0) max_t = probe.hardware.cluster.clustered() ? probe.hardware.cluster.processors_per_node : 8;
  const int stages = static_cast<int>(probe.network.allowed_cuts().size()) + 1;
  // Schedules without data and tensor parallelism (the asynchronous ones) get only t = d = 1.
  const auto parallel = [](const std::string& schedule) {
    const auto& specs = find_schedule(schedule).params;
    return std::any_of(specs.begin(), specs.end(), [](const ParamSpec& spec) { return spec.name == "dp"; });
  };
  std::vector<GraphConfig> configs;
  for (const int t : divisors(request.gpus)) {
    if (t > max_t) continue;
    for (const int p : divisors(request.gpus / t)) {
      if (p > stages) continue;
      const int d = request.gpus / (t * p);
      if (batch % d != 0) continue;
      const std::int64_t replica_batch = batch / d;
      for (const auto b : request.microbatch_sizes) {
        if (replica_batch % b != 0) continue;
        const std::int64_t microbatches = replica_batch / b;
        if (microbatches > 1 << 20) continue;
        for (const auto& schedule : request.schedules) {
          if (t * d > 1 && !parallel(schedule)) continue;
          GraphConfig config = single_replica(request.base);
          config.schedule = schedule;
          config.processors = request.gpus;
          config.microbatches = static_cast<int>(microbatches);
          std::vector<std::string> kept;  // the base's own batch gives way to the replica's
          for (const auto& item : config.params) {
            const std::string key = item.substr(0, item.find('='));
            if (key != "batch" && key != "model.batch") kept.push_back(item);
          }
          config.params = std::move(kept);
          config.params.push_back("model.batch=" + std::to_string(replica_batch));
          if (t * d > 1) {
            config.params.push_back("schedule.tp=" + std::to_string(t));
            config.params.push_back("schedule.dp=" + std::to_string(d));
          }
          configs.push_back(without_other_schedules_params(config));
        }
      }
    }
  }
  if (configs.empty()) {
    throw Error("search: no (t, p, d, microbatch size) splits " + std::to_string(request.gpus) + " GPUs and a batch of " +
                std::to_string(batch) + " with the microbatch sizes given");
  }
  return configs;
}

const std::vector<std::string>& search_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> all = {"rank", "tp", "pp", "dp", "microbatch_size", "fits"};
    for (const auto& c : sweep_columns()) all.push_back(c);
    return all;
  }();
  return columns;
}

nlohmann::ordered_json search_row(const std::string& engine, const GraphConfig& config) {
  const nlohmann::ordered_json sweep = sweep_row(engine, config);
  const Params params = Params::parse(config.params);
  const int t = static_cast<int>(params.get_int("schedule.tp", 1));
  const int d = static_cast<int>(params.get_int("schedule.dp", 1));
  const std::int64_t replica_batch = params.get_int("model.batch", 0);
  nlohmann::ordered_json row;
  row["rank"] = nullptr;
  row["tp"] = t;
  row["pp"] = config.processors / (t * d);
  row["dp"] = d;
  row["microbatch_size"] = config.microbatches > 0 ? replica_batch / config.microbatches : 0;
  row["fits"] = sweep.at("error").get<std::string>().empty() && sweep.at("out_of_memory").get<std::string>().empty();
  for (const auto& [key, value] : sweep.items()) row[key] = value;
  return row;
}

std::vector<nlohmann::ordered_json> rank_search(std::vector<nlohmann::ordered_json> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
    const bool fa = a.at("fits").get<bool>(), fb = b.at("fits").get<bool>();
    if (fa != fb) return fa;
    if (!fa) return false;
    return a.at("iteration_s").get<double>() < b.at("iteration_s").get<double>();
  });
  int rank = 0;
  for (auto& row : rows) {
    if (row.at("fits").get<bool>()) row["rank"] = ++rank;
  }
  return rows;
}

}  // namespace pipetwin
