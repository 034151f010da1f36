// The search over parallel configurations (`pipetwin search`, `pipetwin.search()`): for a model,
// a GPU count and a global batch, every (tensor-parallel t, pipeline p, data-parallel d,
// microbatch size, schedule) with t x p x d = the GPUs, each predicted by an engine like a sweep
// row, ranked by predicted iteration time among those that fit in memory. The candidates and the
// ranking are defined here once; running the rows in parallel is the front end's business
// (worker processes, or a Dask cluster from Python).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

struct SearchRequest {
  GraphConfig base;                          // model, hardware, minibatches, params (model, hardware, schedule)
  int gpus = 8;
  std::int64_t global_batch = 0;             // samples per iteration over all replicas; 0: the model's batch
  std::vector<std::string> schedules{"1f1b"};
  std::vector<std::int64_t> microbatch_sizes{1, 2, 4, 8};
  int max_tensor_parallel = 0;               // 0: the hardware's processors per node (8 without nodes)
};

// Every candidate configuration, as the GraphConfig that builds it (processors = the GPUs;
// tp, dp and the replica's batch in its parameters). Schedules that take no dp (the asynchronous
// ones) are tried only as one pipeline over all the GPUs. Throws on a request with none, on a
// schedule or microbatch size given twice, and on no microbatch sizes or one under 1.
std::vector<GraphConfig> search_configs(const SearchRequest& request);

// A search row: the sweep's columns plus tp, pp, dp, microbatch_size and fits (no error, no
// processor beyond its memory).
const std::vector<std::string>& search_columns();
nlohmann::ordered_json search_row(const std::string& engine, const GraphConfig& config);

// The rows, those that fit first, by iteration time (the same global batch in every row), then
// the others; each gets its rank (1 = best; null for those that do not fit).
std::vector<nlohmann::ordered_json> rank_search(std::vector<nlohmann::ordered_json> rows);

}  // namespace pipetwin
