// `pipetwin search`: the best (tensor-parallel, pipeline, data-parallel, microbatch size,
// schedule) for a model on a number of GPUs, every candidate predicted in a pool of worker
// processes, ranked by predicted iteration time among those that fit in memory.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "graph_options.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/output_file.hpp"
#include "pipetwin/sim/engines.hpp"
#include "pipetwin/sim/search.hpp"
#include "process_pool.hpp"
#include "table.hpp"
#include "output_option.hpp"

namespace pipetwin::cli {
namespace {

struct SearchOptions {
  SearchRequest request;
  std::string model = "gpt";
  std::string hardware = "h100";
  std::vector<std::string> params;
  std::string schedules = "1f1b";
  std::string microbatch_sizes = "1,2,4,8";
  std::string engine;
  std::string csv_file;
  bool json = false;
  int jobs = 0;
  bool quiet = false;
  int top = 10;
};

void run(SearchOptions options) {
  check_engine(options.engine);
  SearchRequest& request = options.request;
  request.base.model = options.model;
  request.base.hardware = options.hardware;
  request.base.params = options.params;
  request.schedules = parse_schedule_list(options.schedules);
  request.microbatch_sizes.clear();
  for (const int b : parse_count_list(options.microbatch_sizes, "--microbatch-sizes", "microbatch sizes", 1 << 20)) {
    request.microbatch_sizes.push_back(b);
  }
  const auto configs = search_configs(request);
  const int jobs = worker_count(options.jobs);
  ProgressBar bar("search", configs.size(), options.quiet);
  const auto lines = run_in_processes(
      configs.size(), jobs, [&](std::size_t k) { return search_row(options.engine, configs[k]).dump(); },
      [&](std::size_t done) { bar.update(done); }, [&](std::size_t k) { return describe_config(configs[k]); });
  std::vector<nlohmann::ordered_json> rows;
  for (const auto& line : lines) rows.push_back(nlohmann::ordered_json::parse(line));
  rows = rank_search(std::move(rows));
  if (!options.csv_file.empty()) write_output_file(options.csv_file, rows_to_csv(search_columns(), rows));
  if (options.json) {
    std::cout << nlohmann::ordered_json(rows).dump(2) << "\n";
    return;
  }
  std::size_t fits = 0, oom = 0, failed = 0;
  for (const auto& r : rows) {
    if (r.at("fits").get<bool>()) {
      ++fits;
    } else if (r.at("error").get<std::string>().empty()) {
      ++oom;
    } else {
      ++failed;
    }
  }
  std::cout << fmt::format("search · {} · {} · {} GPUs · batch {} · {} candidates: {} fit, {} beyond memory, {} cannot "
                           "be built · {} · {}\n",
                           options.model, options.hardware, request.gpus,
                           request.global_batch > 0 ? std::to_string(request.global_batch) : "(the model's)",
                           rows.size(), fits, oom, failed,
                           options.engine == "analytic" ? "analytic evaluator" : "SystemC simulator", describe_workers(configs.size(), jobs));
  Table table({"rank", "schedule", "tp", "pp", "dp", "microbatch", "microbatches", "iteration_s", "bubble",
               "max_peak_memory"});
  int shown = 0;
  for (const auto& r : rows) {
    if (!r.at("fits").get<bool>() || shown++ >= options.top) continue;
    table.add_row({std::to_string(r.at("rank").get<int>()), r.at("schedule").get<std::string>(),
                   std::to_string(r.at("tp").get<int>()), std::to_string(r.at("pp").get<int>()),
                   std::to_string(r.at("dp").get<int>()), std::to_string(r.at("microbatch_size").get<std::int64_t>()),
                   std::to_string(r.at("microbatches").get<int>()),
                   fmt::format("{:.4g}", r.at("iteration_s").get<double>()),
                   fmt::format("{:.1f}%", 100 * r.at("bubble_fraction").get<double>()),
                   human_bytes(r.at("max_peak_memory_bytes").get<std::int64_t>())});
  }
  table.print(std::cout);
  if (fits == 0) std::cout << "no candidate fits in memory; --csv or --json lists them all with their errors\n";
  std::cout << "iteration_s: predicted steady-state time of one iteration (the whole global batch); ranked among those "
               "that fit\n";
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto options = std::make_shared<SearchOptions>();
  auto* command = app.add_subcommand(
      "search", "find the best tensor-parallel x pipeline x data-parallel split, microbatch size and schedule for a "
                "model on a number of GPUs: every candidate predicted (in parallel worker processes), ranked by "
                "iteration time among those that fit in memory");
  command->add_option("-m,--model", options->model, "network: a name from `pipetwin models`, or a network file ending in .json")
      ->capture_default_str();
  command->add_option("--hardware", options->hardware, "hardware profile from `pipetwin hardware` (its nodes and NICs matter)")
      ->capture_default_str();
  command->add_option("--gpus", options->request.gpus, "GPUs to use: t x p x d of them")->capture_default_str();
  command->add_option("--batch", options->request.global_batch,
                      "global batch: samples per iteration over all data-parallel replicas (default: the model's batch)");
  command->add_option("--schedules", options->schedules, "comma-separated synchronous schedules to try, or all")
      ->capture_default_str();
  command->add_option("--microbatch-sizes", options->microbatch_sizes, "samples per microbatch to try, e.g. 1,2,4 or 1-8")
      ->capture_default_str();
  command->add_option("--max-tp", options->request.max_tensor_parallel,
                      "largest tensor-parallel degree (default: the GPUs of a node)");
  command->add_option("--minibatches", options->request.base.minibatches, "iterations to schedule per prediction")
      ->capture_default_str();
  command->add_option("--param", options->params,
                      "key=value for the model, hardware or schedule (repeatable), e.g. layers=48, memory_bytes=4e10, "
                      "recompute=blocks");
  options->engine = "analytic";
  command->add_option("--engine", options->engine, "analytic (fast) or systemc (link contention)")->capture_default_str();
  command->add_option("--top", options->top, "rows of the table (the CSV and JSON have them all)")->capture_default_str();
  command->add_option("--csv", options->csv_file, "also write every candidate as CSV to this file")
      ->check(writable_output_file());
  command->add_flag("--json", options->json, "print every candidate as JSON instead of the table");
  add_jobs_option(*command, options->jobs);
  command->add_flag("--quiet,-q", options->quiet, "no progress on stderr");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
