// The CPU executor's numerics under every schedule: synchronous schedules reproduce sequential
// SGD with gradient accumulation; asynchronous ones reproduce an independent replay of delayed
// SGD from the versions the schedule declares. Batch norm uses each microbatch's statistics in
// the executor and the references alike, so the comparison on resnet8 is exact too.
// Also: measured results have the simulator's schema, and bad input gives clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#if defined(__linux__)
#include <sched.h>
#endif

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cpu/profiler.hpp"
#include "pipetwin/exec/cpu/validation.hpp"
#include "pipetwin/exec/co_run_slope.hpp"
#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/gradient_assembly.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/stash_reuse.hpp"
#include "pipetwin/schedule/wait_loss.hpp"
#include "pipetwin/schedule/weight_reuse.hpp"
#include "synthetic_data.hpp"
#include "temporary_folder.hpp"
#include "training_reference.hpp"

namespace pipetwin {
namespace {

struct Case {
  std::string model;
  std::vector<std::string> params;
};

GraphConfig config_for(const Case& c, const std::string& schedule, int processors, int microbatches, int minibatches,
                       std::vector<std::string> extra = {}) {
  GraphConfig config;
  config.model = c.model;
  config.schedule = schedule;
  config.hardware = "cpu-core";
  config.processors = processors;
  config.microbatches = microbatches;
  config.minibatches = minibatches;
  config.params = c.params;
  config.params.insert(config.params.end(), extra.begin(), extra.end());
  return config;
}

const Case kMlp{"mlp", {"widths=24,16,12,10,6", "batch=8"}};
const Case kLenet{"lenet5", {"batch=4"}};
const Case kResnet{"resnet8", {"batch=4"}};

struct Trained {
  TaskGraph graph;
  Network network;
  TrainingRun run;
};

Trained train(const GraphConfig& config, const Dataset& data, double learning_rate = 0.05, double momentum = 0.0) {
  const ScheduleRequest request = make_request(config);
  Trained t{make_graph(config), request.network, {}};
  const BatchSampler sampler = graph_sampler(data, t.graph, request.network, 7);
  TrainingOptions options;
  options.learning_rate = learning_rate;
  options.momentum = momentum;
  t.run = cpu::run_cpu(t.graph, t.network, sampler, options);
  return t;
}

Dataset data_for(const Case& c) {
  return test::synthetic_data_for(make_request(config_for(c, "sequential", 1, 1, 1)).network);
}

// A machine that runs each schedule's next scripted step, in turn (its own copy of the script).
Runner scripted_steps(std::map<std::string, std::vector<double>> steps_s) {
  std::map<std::string, std::size_t> runs;
  return Runner([steps_s, runs](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) mutable {
    TrainingRun run;
    run.result.iteration_s = steps_s.at(g.schedule).at(runs[g.schedule]++);
    return run;
  });
}

// A runner that runs on the CPU executor and keeps each graph it was given with its run, in order.
using RecordedRuns = std::vector<std::pair<TaskGraph, TrainingRun>>;
Runner recording_into(RecordedRuns& recorded) {
  return [&recorded](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    recorded.emplace_back(g, cpu::run_cpu(g, n, s, o));
    return recorded.back().second;
  };
}

// A run of d replicas (each of M microbatches) against sequential SGD of `network` on the d-times
// larger batch, its gradients summed in the replicas' order (with momentum, a different rounding
// grows past 1e-5 within a few steps on resnet8); and training moved the weights. With momentum the
// bound is 5e-5: tensor-parallel shards' GEMMs, smaller than the unsplit network's, round
// differently where oneDNN runs AVX-512 (mlp, 1f1b, t = 2, momentum 0.9, 8 steps: 1.7e-5 on an
// AVX-512 core, under 1e-5 with ONEDNN_MAX_CPU_ISA=AVX2).
void check_large_batch_sgd(const Trained& t, Network network, const Dataset& data, int d, int M, int steps,
                           double momentum) {
  network.batch *= d;
  const BatchSampler sampler(data, network.batch, M * d, steps, 7);
  const auto expected = test::sequential_sgd(network, sampler, steps, M * d, {0.05, momentum}, t.run.initial_weights, d);
  CHECK(test::max_relative_difference(t.run.final_weights, expected) < (momentum > 0 ? 5e-5 : 1e-5));
  CHECK(test::max_relative_difference(t.run.final_weights, t.run.initial_weights) > 1e-3);
}

}  // namespace

TEST_CASE("sync: synchronous schedules give the weights of sequential SGD with gradient accumulation") {
  const int steps = 10, M = 4;
  for (const Case& c : {kMlp, kLenet, kResnet}) {
    const Dataset data = data_for(c);
    for (const std::string schedule : {"sequential", "gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b"}) {
      for (const int P : {1, 2, 3}) {
        if (schedule == "interleaved-1f1b" && (P == 3 || c.model == "resnet8")) continue;  // M % P, chunks*P stages
        CAPTURE(c.model);
        CAPTURE(schedule);
        CAPTURE(P);
        const double momentum = schedule == "1f1b" ? 0.9 : 0.0;
        const Trained t = train(config_for(c, schedule, P, M, steps), data, 0.05, momentum);
        const BatchSampler sampler(data, t.network.batch, M, steps, 7);
        const auto expected = test::sequential_sgd(t.network, sampler, steps, M, {0.05, momentum}, t.run.initial_weights);
        CHECK(test::max_relative_difference(t.run.final_weights, expected) < 1e-5);
        // Training moved the weights (so the comparison means something).
        CHECK(test::max_relative_difference(t.run.final_weights, t.run.initial_weights) > 1e-3);
      }
    }
  }
}

TEST_CASE("data parallelism: d replicas and their all-reduces give the weights of SGD on the d-times larger batch") {
  const int steps = 6, M = 2;
  for (const Case& c : {kMlp, kLenet, kResnet}) {
    const Dataset data = data_for(c);
    struct Split { std::string schedule; int P; int d; std::vector<std::string> params; };
    const std::vector<Split> splits = {
        {"sequential", 1, 2, {}}, {"1f1b", 2, 2, {}}, {"gpipe", 2, 3, {}}, {"zb-h1", 2, 2, {"rank_order=tp-pp-dp"}},
        {"1f1b", 1, 4, {"allreduce=hierarchical", "processors_per_node=2"}}};
    for (const auto& split : splits) {
      if (c.model == "resnet8" && split.d > 2) continue;  // keep the test quick
      CAPTURE(c.model);
      CAPTURE(split.schedule);
      CAPTURE(split.d);
      std::vector<std::string> params = split.params;
      params.push_back("dp=" + std::to_string(split.d));
      const double momentum = split.schedule == "1f1b" ? 0.9 : 0.0;
      const Trained t = train(config_for(c, split.schedule, split.P * split.d, M, steps, params), data, 0.05, momentum);
      REQUIRE(t.graph.collectives.size() == static_cast<std::size_t>(split.P * steps));
      check_large_batch_sgd(t, t.network, data, split.d, M, steps, momentum);
    }
  }
}

TEST_CASE("tensor parallelism: Megatron's column- then row-parallel dense pairs, each shard on a thread, give the unsplit network's weights") {
  const int steps = 8, M = 2;
  const Dataset data = data_for(kMlp);
  struct Split { std::string schedule; int P; int t; int d; };
  for (const Split& split : std::vector<Split>{{"sequential", 1, 2, 1}, {"1f1b", 2, 2, 1}, {"gpipe", 2, 2, 1},
                                               {"1f1b", 1, 2, 2}, {"zb-h1", 2, 2, 2}}) {
    CAPTURE(split.schedule);
    CAPTURE(split.P);
    CAPTURE(split.t);
    CAPTURE(split.d);
    std::vector<std::string> params = {"tp=" + std::to_string(split.t), "dp=" + std::to_string(split.d)};
    const double momentum = split.schedule == "1f1b" ? 0.9 : 0.0;
    const Trained t = train(config_for(kMlp, split.schedule, split.P * split.t * split.d, M, steps, params), data, 0.05,
                            momentum);
    // The network the executor ran is split: fc1 by columns, fc2 by rows (then fc3, fc4).
    REQUIRE(t.network.layers[0].tensor_split == TensorSplit::columns);
    REQUIRE(t.network.layers[1].tensor_split == TensorSplit::rows);
    CHECK(t.graph.processor_count() == split.P * split.d);  // a processor is a group of t ranks
    // The reference runs the unsplit network.
    check_large_batch_sgd(t, make_request(config_for(kMlp, "sequential", 1, M, steps)).network, data, split.d, M, steps,
                          momentum);
  }
}

TEST_CASE("async: asynchronous schedules give exactly the weights of a delayed-SGD replay of their declared versions") {
  const int steps = 10;
  for (const Case& c : {kMlp, kLenet, kResnet}) {
    const Dataset data = data_for(c);
    struct Async { std::string schedule; int P; int M; std::vector<std::string> params; };
    const std::vector<Async> runs = {
        {"pipedream", 2, 1, {}}, {"pipedream", 3, 2, {}}, {"pipedream-2bw", 2, 2, {}},
        {"layerpipe", 1, 2, {}}, {"layerpipe", 2, 1, {}}, {"layerpipe", 3, 2, {"ba_parts=2"}}, {"stale-weights", 2, 1, {}},
        {"stale-weights", 3, 1, {"hybrid=0.5"}}, {"stale-weights", 2, 1, {"stash=true"}}, {"pipefb", 2, 1, {}}, {"pipefb", 4, 1, {}}, {"pipefb", 3, 1, {"fnodes=1"}},
        {"layerwise-merge", 2, 1, {}}};
    for (const auto& a : runs) {
      if (c.model == "resnet8" && a.P > 2) continue;  // keep the test quick
      CAPTURE(c.model);
      CAPTURE(a.schedule);
      CAPTURE(a.P);
      const Trained t = train(config_for(c, a.schedule, a.P, a.M, steps, a.params), data);
      const BatchSampler sampler(data, t.network.batch, a.M, steps, 7);
      const auto expected = test::delayed_sgd_replay(t.graph, t.network, sampler, {0.05, 0.0}, t.run.initial_weights);
      CHECK(test::max_relative_difference(t.run.final_weights, expected) == 0.0);  // bit for bit
      CHECK(test::max_relative_difference(t.run.final_weights, t.run.initial_weights) > 1e-3);
    }
    // LayerPipe with a table as the executors' profiles make it (the first layer's BA timed at
    // 0), whose measured costs place the tasks: no BA task at the first layer there either, the
    // same delayed SGD.
    GraphConfig config = config_for(c, "layerpipe", 2, 2, steps);
    const Network network = make_request(config).network;
    auto table = std::make_shared<Calibration>();
    for (const auto& layer : network.layers) table->layers[layer.name] = {1e-4, 2e-4, 2e-4, 3e-4, 1e-5};
    table->layers[network.layers.front().name].activation_grad_s = 0;
    config.calibration = table;
    const Trained t = train(config, data);
    CAPTURE(c.model);
    REQUIRE(std::none_of(t.graph.tasks.begin(), t.graph.tasks.end(),
                         [](const Task& task) { return task.kind == TaskKind::BA && task.first_layer == 0; }));
    const BatchSampler sampler(data, t.network.batch, 2, steps, 7);
    const auto expected = test::delayed_sgd_replay(t.graph, t.network, sampler, {0.05, 0.0}, t.run.initial_weights);
    CHECK(test::max_relative_difference(t.run.final_weights, expected) == 0.0);
  }
}

TEST_CASE("recompute=full: the weights of the run without it, less activation memory, one forward more per backward") {
  const int steps = 4, M = 4;
  for (const Case& c : {kMlp, kLenet, kResnet}) {
    const Dataset data = data_for(c);
    for (const std::string schedule : {"sequential", "gpipe", "1f1b", "pipedream", "pipedream-2bw", "zb-h1", "zb-h2",
                                       "interleaved-1f1b"}) {
      for (const int P : {1, 2}) {
        if (schedule == "interleaved-1f1b" && c.model == "resnet8") continue;  // chunks * P stages
        CAPTURE(c.model);
        CAPTURE(schedule);
        CAPTURE(P);
        const Trained plain = train(config_for(c, schedule, P, M, steps), data);
        const Trained recomputed = train(config_for(c, schedule, P, M, steps, {"recompute=full"}), data);
        CHECK(test::max_relative_difference(recomputed.run.final_weights, plain.run.final_weights) <= 1e-6);
        CHECK(recomputed.run.minibatch_loss == plain.run.minibatch_loss);
        // One RC per backward that computes an input gradient, each the cost of its forward.
        std::int64_t forwards = 0, recomputations = 0, forward_cycles = 0, recompute_cycles = 0;
        for (const auto& t : plain.graph.tasks) {
          if (t.kind == TaskKind::F) ++forwards, forward_cycles += t.cost_cycles;
        }
        for (const auto& t : recomputed.graph.tasks) {
          if (t.kind == TaskKind::RC) ++recomputations, recompute_cycles += t.cost_cycles;
        }
        CHECK(recomputations == forwards);
        CHECK(recompute_cycles == forward_cycles);
      }
    }
  }
  // On one processor everything is serial: the recomputations add exactly their cycles.
  const GraphConfig one = config_for(kLenet, "sequential", 1, M, 2);
  GraphConfig one_recomputed = one;
  one_recomputed.params.push_back("recompute=full");
  const TaskGraph g = make_graph(one), g_rc = make_graph(one_recomputed);
  std::int64_t recompute_cycles = 0;
  for (const auto& t : g_rc.tasks) recompute_cycles += t.kind == TaskKind::RC ? t.cost_cycles : 0;
  CHECK(evaluate(g_rc).total_cycles == evaluate(g).total_cycles + recompute_cycles);
  // GPipe's first stage holds all M stashes at once; with recomputation only M stage inputs and one
  // stash: less, in the prediction and in what the executor really held.
  const Trained gpipe = train(config_for(kLenet, "gpipe", 2, M, 2), data_for(kLenet));
  const Trained gpipe_rc = train(config_for(kLenet, "gpipe", 2, M, 2, {"recompute=full"}), data_for(kLenet));
  CHECK(evaluate(gpipe_rc.graph).peak_memory_bytes[0] < evaluate(gpipe.graph).peak_memory_bytes[0]);
  CHECK(gpipe_rc.run.result.peak_memory_bytes[0] < gpipe.run.result.peak_memory_bytes[0]);
}

TEST_CASE("shared links: transfers run as soon as they are ready, several at once, with the same numerics") {
  const int steps = 4;
  for (const Case& c : {kMlp, kLenet}) {
    const Dataset data = data_for(c);
    struct Run { std::string schedule; int P; int M; std::vector<std::string> params; };
    for (const Run& r : std::vector<Run>{{"gpipe", 3, 4, {}}, {"1f1b", 3, 4, {"offload=true"}}, {"pipedream", 3, 2, {}},
                                          {"layerpipe", 3, 2, {}}, {"pipefb", 4, 1, {}}}) {
      CAPTURE(c.model);
      CAPTURE(r.schedule);
      std::vector<std::string> shared = r.params;
      shared.push_back("hardware.link_policy=shared");
      shared.push_back("hardware.host_link_policy=shared");
      const Trained in_order = train(config_for(c, r.schedule, r.P, r.M, steps, r.params), data);
      const Trained concurrent = train(config_for(c, r.schedule, r.P, r.M, steps, shared), data);
      for (const auto& link : concurrent.graph.links) CHECK(link.policy == LinkPolicy::shared);
      CHECK(test::max_relative_difference(concurrent.run.final_weights, in_order.run.final_weights) == 0.0);
      // Every transfer still starts after its dependencies have ended.
      for (const auto& t : concurrent.graph.tasks) {
        for (const auto& d : t.deps) {
          CHECK(concurrent.run.result.tasks[static_cast<std::size_t>(d.task)].end_cycles <=
                concurrent.run.result.tasks[static_cast<std::size_t>(t.id)].start_cycles);
        }
      }
    }
  }
}

TEST_CASE("recompute: clear errors for what it does not do") {
  CHECK_THROWS_WITH_AS(make_graph(config_for(kMlp, "1f1b", 2, 2, 1, {"recompute=some"})),
                       doctest::Contains("unknown recompute mode 'some'"), Error);
  CHECK_THROWS_WITH_AS(make_graph(config_for(kMlp, "1f1b", 2, 2, 1, {"recompute=full", "offload=true"})),
                       doctest::Contains("do not combine"), Error);
  CHECK_THROWS_WITH_AS(make_graph(config_for(kMlp, "1f1b", 2, 2, 1, {"recompute=selective", "offload=true"})),
                       doctest::Contains("do not combine"), Error);
}

TEST_CASE("the staleness is real: an asynchronous schedule differs from sequential SGD") {
  const Dataset data = data_for(kMlp);
  const Trained t = train(config_for(kMlp, "pipedream", 3, 1, 10), data);
  const BatchSampler sampler(data, t.network.batch, 1, 10, 7);
  const auto sequential = test::sequential_sgd(t.network, sampler, 10, 1, {0.05, 0.0}, t.run.initial_weights);
  CHECK(test::max_relative_difference(t.run.final_weights, sequential) > 1e-4);
}

TEST_CASE("a measured result has the simulator's schema, real memory peaks and a loss per minibatch") {
  const Dataset data = data_for(kMlp);
  std::atomic<int> progress{0};
  const GraphConfig config = config_for(kMlp, "1f1b", 2, 4, 3, {"offload=true"});
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const BatchSampler sampler(data, request.network.batch, 4, 3, 7);
  TrainingOptions options;
  options.on_minibatch = [&](std::int32_t done) { progress = std::max(progress.load(), static_cast<int>(done)); };
  const TrainingRun run = cpu::run_cpu(graph, request.network, sampler, options);
  CHECK(run.result.engine == "cpu");
  REQUIRE(run.result.tasks.size() == graph.tasks.size());
  for (const auto& t : graph.tasks) {
    for (const auto& d : t.deps) CHECK(run.result.tasks[static_cast<std::size_t>(d.task)].end_cycles <= run.result.tasks[static_cast<std::size_t>(t.id)].start_cycles);
  }
  CHECK(run.result.total_cycles > 0);
  CHECK(run.result.iteration_s > 0);
  REQUIRE(run.result.peak_memory_bytes.size() == 2);
  // At least the stage's weights (one version) are held on each processor.
  for (int p = 0; p < 2; ++p) CHECK(run.result.peak_memory_bytes[static_cast<std::size_t>(p)] > 0);
  CHECK(run.result.host_peak_memory_bytes > 0);  // activations went through host memory
  CHECK(run.minibatch_loss.size() == 3);
  CHECK(progress == 3);
  for (const double loss : run.minibatch_loss) CHECK(loss > 0);
}

TEST_CASE("bad input: memory beyond capacity, divergence, missing dataset") {
  const Dataset data = data_for(kMlp);
  SUBCASE("a graph that declares more memory than a processor has") {
    CHECK_THROWS_WITH_AS(train(config_for(kMlp, "gpipe", 2, 4, 2, {"hardware.memory_bytes=2000"}), data),
                         doctest::Contains("out of memory on p"), Error);
  }
  SUBCASE("a NaN loss") {
    CHECK_THROWS_WITH_AS(train(config_for(kMlp, "1f1b", 2, 2, 20), data, 1e30),
                         doctest::Contains("training diverged"), Error);
  }
  SUBCASE("a missing or broken dataset file") {
    CHECK_THROWS_WITH_AS(load_fashion_mnist("/nonexistent", "train"), doctest::Contains("Fashion-MNIST not found"), Error);
    const test::TemporaryFolder folder("idx");
    const std::string dir = folder.path().string();
    std::ofstream(dir + "/train-images-idx3-ubyte") << "not an idx file";
    std::ofstream(dir + "/train-labels-idx1-ubyte") << "nor this";
    CHECK_THROWS_WITH_AS(load_fashion_mnist(dir, "train"), doctest::Contains("is not an IDX image file"), Error);
  }
  SUBCASE("a network the executor cannot run") {
    GraphConfig config = config_for({"gpt", {"layers=2", "hidden=8", "heads=2", "seq=4", "vocab=16", "batch=2"}}, "sequential", 1, 1, 1);
    const ScheduleRequest request = make_request(config);
    CHECK_THROWS_WITH_AS(initial_weights(request.network, 1), doctest::Contains("the CPU executor does not run"), Error);
  }
}

TEST_CASE("a sampler fills the samples, the labels or both of a microbatch, the same either way") {
  const Dataset data = data_for(kLenet);
  const BatchSampler sampler(data, 16, 4, 3, 7);
  Eigen::MatrixXf both_x, only_x;
  std::vector<std::int32_t> both_y, only_y;
  sampler.fill(2, 3, &both_x, &both_y);
  sampler.fill(2, 3, &only_x, nullptr);
  sampler.fill(2, 3, nullptr, &only_y);
  REQUIRE(both_x.cols() == 4);
  CHECK(both_x.rows() == data.samples.rows());
  CHECK(only_x == both_x);
  CHECK(only_y == both_y);
  // Each column is a sample of the data set, with its label.
  for (Eigen::Index i = 0; i < both_x.cols(); ++i) {
    bool found = false;
    for (Eigen::Index s = 0; s < data.samples.cols() && !found; ++s) {
      found = data.samples.col(s) == both_x.col(i) && data.labels[static_cast<std::size_t>(s)] == both_y[static_cast<std::size_t>(i)];
    }
    CHECK(found);
  }
}

TEST_CASE("--data idx: any IDX folder, standardised with its training images' mean and std") {
  const test::TemporaryFolder folder("idx-folder");
  const std::string dir = folder.path().string();
  // 3 training images of 2x2 pixels (0, 51, 102, ..., 255 = 0.0, 0.2, ..., 1.0 after / 255) and 1 test image.
  auto write = [&](const std::string& name, std::uint32_t magic, std::vector<std::uint32_t> dims,
                   const std::vector<unsigned char>& bytes) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    for (const std::uint32_t word : [&] { dims.insert(dims.begin(), magic); return dims; }()) {
      const unsigned char be[4] = {static_cast<unsigned char>(word >> 24), static_cast<unsigned char>(word >> 16),
                                   static_cast<unsigned char>(word >> 8), static_cast<unsigned char>(word)};
      out.write(reinterpret_cast<const char*>(be), 4);
    }
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  const std::vector<unsigned char> train_pixels{0, 51, 102, 153, 204, 255, 0, 51, 102, 153, 204, 255};
  write("train-images-idx3-ubyte", 0x803, {3, 2, 2}, train_pixels);
  write("train-labels-idx1-ubyte", 0x801, {3}, {0, 1, 2});
  write("t10k-images-idx3-ubyte", 0x803, {1, 2, 2}, {255, 255, 0, 0});
  write("t10k-labels-idx1-ubyte", 0x801, {1}, {1});
  // The training pixels' mean and std, computed here from their values.
  const auto count = static_cast<double>(train_pixels.size());
  double mean = 0, square = 0;
  for (const auto p : train_pixels) mean += p / 255.0 / count;
  for (const auto p : train_pixels) square += (p / 255.0 - mean) * (p / 255.0 - mean) / count;
  const double std = std::sqrt(square);
  const Dataset train = load_idx_folder(dir, "train");
  const Dataset test = load_idx_folder(dir, "test");
  CHECK(train.size() == 3);
  CHECK(train.classes == 3);
  CHECK(test.size() == 1);
  CHECK(train.samples.mean() == doctest::Approx(0).epsilon(1e-6));
  CHECK(test.samples(0, 0) == doctest::Approx((1.0 - mean) / std).epsilon(1e-5));
  CHECK(test.samples(3, 0) == doctest::Approx((0.0 - mean) / std).epsilon(1e-5));
  // Through load_dataset_for, the image must match the network's input.
  Network mlp4 = make_request(config_for({"mlp", {"widths=4,3"}}, "sequential", 1, 1, 1)).network;
  CHECK(load_dataset_for("idx", dir, mlp4, "test").samples.rows() == 4);
  CHECK_THROWS_WITH_AS(load_dataset_for("idx", dir, make_request(config_for(kMlp, "sequential", 1, 1, 1)).network, "train"),
                       doctest::Contains("has images of"), Error);
  CHECK_THROWS_WITH_AS(load_idx_folder(dir + "/missing", "train"), doctest::Contains("--data-dir"), Error);
}

TEST_CASE("validation falls back to sequential only where a schedule cannot be built on one processor") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.runs = 1;
  const auto predict = [](const TaskGraph& g) { return evaluate(g); };
  SUBCASE("pipefb needs an even processor count: its speedups are over sequential at P=1") {
    options.schedules = {"pipefb"};
    options.processors = {2};
    const ValidationReport report = cpu::validate_cpu(config_for(kMlp, "pipefb", 2, 2, 2), data, options, predict);
    REQUIRE(report.rows.size() == 1);
    CHECK(report.rows[0].baseline == "sequential");
  }
  SUBCASE("an out-of-memory at P=1 is the user's to see, not a reason to compare with sequential") {
    // Between the two schedules' predicted one-processor peaks: gpipe (every microbatch's stash at
    // once) does not fit, sequential (one stash at a time) does.
    const auto peak = [&](const std::string& schedule) {
      return evaluate(make_graph(config_for(kMlp, schedule, 1, 4, 2))).peak_memory_bytes[0];
    };
    const std::int64_t sequential = peak("sequential"), gpipe = peak("gpipe");
    REQUIRE(sequential < gpipe);
    options.schedules = {"gpipe"};
    options.processors = {1, 2};
    const GraphConfig config =
        config_for(kMlp, "gpipe", 1, 4, 2, {"hardware.memory_bytes=" + std::to_string((sequential + gpipe) / 2)});
    CHECK_THROWS_WITH_AS(cpu::validate_cpu(config, data, options, predict), doctest::Contains("out of memory"), Error);
  }
}

TEST_CASE("validation of data parallelism: the baseline is one replica on one processor, each replica its own batch") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.runs = 1;
  options.schedules = {"gpipe"};
  options.processors = {1, 2};
  const auto predict = [](const TaskGraph& g) { return evaluate(g); };
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2, {"dp=2"});
  const ValidationReport report = cpu::validate_cpu(config, data, options, predict);
  REQUIRE(report.rows.size() == 2);
  CHECK(report.rows[0].baseline == "gpipe");
  // Two replicas of the one-processor pipeline: each processor holds what the one processor did
  // (its all-reduce sums in place), and each replica's graph is the baseline's.
  GraphConfig one = config;
  one.params = single_replica(config).params;
  const std::int64_t one_peak = evaluate(make_graph(one)).peak_memory_bytes[0];
  CHECK(report.rows[0].measured_peak_bytes == one_peak);
  CHECK(report.rows[1].measured_peak_bytes == one_peak);
  CHECK(report.rows[1].measured_peak_max_bytes == one_peak);  // one run: its peak is the highest
  CHECK(report.rows[1].measured_step_s > 0);
}

TEST_CASE("validation takes its runs in turns over the configurations and reports their spread") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.schedules = {"gpipe", "1f1b"};
  options.processors = {1, 2};
  options.runs = 3;
  // Four configurations (gpipe and 1f1b at P = 1 and 2). A scripted machine: step times by
  // configuration and by its run (rows of script_s, in one_round's order), and the order in which
  // configurations ran.
  const std::vector<std::pair<std::string, int>> one_round = {{"gpipe", 1}, {"gpipe", 2}, {"1f1b", 1}, {"1f1b", 2}};
  const std::vector<std::vector<double>> script_s = {
      {1.0, 0.6, 1.0, 0.5}, /* run 2 */ {1.2, 0.5, 1.1, 0.6}, /* run 3 */ {0.8, 0.7, 0.9, 0.4}};
  std::vector<std::pair<std::string, int>> order;
  const Runner scripted = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    const std::pair<std::string, int> configuration{g.schedule, g.processor_count()};
    const auto at = std::find(one_round.begin(), one_round.end(), configuration);
    REQUIRE(at != one_round.end());
    const auto run_index = static_cast<std::size_t>(std::count(order.begin(), order.end(), configuration));
    order.push_back(configuration);
    TrainingRun run;
    run.result.iteration_s = script_s.at(run_index).at(static_cast<std::size_t>(at - one_round.begin()));
    return run;
  };
  const ValidationReport report =
      validate(config_for(kMlp, "gpipe", 1, 2, 2), data, options, [](const TaskGraph& g) { return evaluate(g); }, scripted);
  // Each configuration runs once before any runs again, in each round's own order (run_order,
  // from the training seed), a schedule's two next to each other.
  REQUIRE(order.size() == 12);
  for (int r = 0; r < 3; ++r) {
    const auto round_order = run_order({2, 2}, options.training.seed, r);
    for (std::size_t i = 0; i < 4; ++i) CHECK(order[4 * static_cast<std::size_t>(r) + i] == one_round[round_order[i]]);
  }
  // gpipe at P = 2 ran 0.6, 0.5, 0.7: median 0.6, half-range 0.1; speedup over its P = 1 (1.0,
  // 1.2, 0.8: median 1.0) 1.0 / 0.6.
  REQUIRE(report.rows.size() == 4);
  const ValidationRow& gpipe2 = report.rows[1];
  CHECK(gpipe2.measured_step_s == doctest::Approx(0.6));
  CHECK(gpipe2.measured_spread == doctest::Approx(0.1 / 0.6));
  CHECK(gpipe2.measured_speedup == doctest::Approx(1.0 / 0.6));
  // Its speedup error, round by round: the one prediction's speedup S (the evaluator's one
  // processor over two) over the rounds' measured 1.0/0.6, 1.2/0.5 and 0.8/0.7; the median is
  // the middle measured speedup's, and three rounds' interval spans all three.
  const auto evaluated_s = [&](int processors) {
    return evaluate(make_graph(config_for(kMlp, "gpipe", processors, 2, 2))).iteration_s;
  };
  const double predicted_speedup = evaluated_s(1) / evaluated_s(2);
  const double middle = predicted_speedup / (1.0 / 0.6), high = predicted_speedup / (0.8 / 0.7),
               low = predicted_speedup / (1.2 / 0.5);
  CHECK(gpipe2.speedup_error == doctest::Approx(middle - 1));
  CHECK(gpipe2.speedup_error_ci == doctest::Approx((high - low) / 2 / middle));
  // The baselines' rows (each schedule on one processor) have no speedup error, and are left out
  // of the mean: 1f1b at P = 2 ran 0.5, 0.6, 0.4 against 1.0, 1.1, 0.9.
  CHECK(report.rows[0].speedup_error == 0);
  CHECK(report.rows[0].speedup_error_ci == 0);
  const ValidationRow& one_f1b2 = report.rows[3];
  REQUIRE(one_f1b2.schedule == "1f1b");
  CHECK(report.mean_abs_speedup_error ==
        doctest::Approx((std::abs(gpipe2.speedup_error) + std::abs(one_f1b2.speedup_error)) / 2));
  CHECK(report.max_abs_speedup_error ==
        doctest::Approx(std::max(std::abs(gpipe2.speedup_error), std::abs(one_f1b2.speedup_error))));
  // Spreads: gpipe 1 0.2/1.0, gpipe 2 0.1/0.6, 1f1b 1 (1.0, 1.1, 0.9) 0.1/1.0, 1f1b 2 (0.5, 0.6, 0.4)
  // 0.1/0.5; their median (the upper of the two middle ones, as median_of takes) is 0.2.
  CHECK(report.noise_floor == doctest::Approx(0.2));
  // Three runs: the 95% interval of a median spans them all, (0.7 - 0.5) / 2 over 0.6.
  CHECK(gpipe2.error_ci == doctest::Approx(0.1 / 0.6));
  CHECK(report.rounds == 3);
  // At P = 2, gpipe's rounds over 1f1b's: 0.6/0.5, 0.5/0.6, 0.7/0.4 (1.2, 0.83, 1.75); three
  // rounds' interval spans them all, 1 inside: the pair's measured order is not known and no pair
  // is left to rank.
  CHECK(report.separable_pairs.at(2) == std::pair<int, int>{0, 1});
  CHECK(std::isnan(report.separable_kendall_tau.at(2)));
}

TEST_CASE("validation knows a pair's measured order from its rounds' ratios, the machine's drift cancelled") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.schedules = {"gpipe", "1f1b"};
  options.processors = {1};
  options.runs = 9;
  // A machine whose speed moves by 30% between rounds, 1f1b 4% slower than gpipe in every round:
  // the two medians' intervals overlap, yet each round orders them alike.
  const std::vector<double> gpipe_s = {1.0, 1.3, 0.8, 1.15, 0.9, 1.05, 0.85, 1.2, 0.95};
  std::map<std::string, std::vector<double>> script_s = {{"gpipe", gpipe_s}, {"1f1b", {}}};
  for (const double s : gpipe_s) script_s["1f1b"].push_back(1.04 * s);
  // Predicted in that order (gpipe 1.0, 1f1b 1.1): the one separable pair agrees.
  const Predictor predict = [](const TaskGraph& g) {
    Result r = evaluate(g);
    r.iteration_s = g.schedule == "gpipe" ? 1.0 : 1.1;
    return r;
  };
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const ValidationReport ordered = validate(config, data, options, predict, scripted_steps(script_s));
  const double gpipe_reach = median_ci_half_width(gpipe_s) * 1.0;  // gpipe's median: 1.0
  REQUIRE(ordered.rows.size() == 2);
  CHECK(std::abs(ordered.rows[0].measured_step_s - ordered.rows[1].measured_step_s) < 2 * gpipe_reach);  // intervals overlap
  CHECK(ordered.separable_pairs.at(1) == std::pair<int, int>{1, 1});
  CHECK(ordered.separable_kendall_tau.at(1) == doctest::Approx(1.0));
  // The same two medians from rounds that order them either way (ratios 0.9 to 1.1 about 1): not known.
  const std::vector<double> against = {1.0, 1.04, 0.72, 1.25, 0.85, 1.1, 0.9, 1.3, 1.05};
  const ValidationReport unordered =
      validate(config, data, options, predict, scripted_steps({{"gpipe", gpipe_s}, {"1f1b", against}}));
  CHECK(unordered.separable_pairs.at(1) == std::pair<int, int>{0, 1});
  // Three schedules, three pairs, each judged at 5% / 3 so that all three judgements hold at 95%
  // together (nine rounds' exact interval then spans all nine ratios: 2 P(B <= 1) = 20 / 512 is
  // over 5% / 3, where at 5% it leaves out the lowest). gpipe 4% slower than 1f1b in eight rounds
  // and 10% faster in one: ordered at 5% (the eight alike), not at 5% / 3. Pipedream, 50% slower
  // than gpipe in every round, is ordered against both (not sequential: at one processor it runs
  // 1f1b's program, same_program).
  std::map<std::string, std::vector<double>> three_s = {{"gpipe", gpipe_s}, {"1f1b", {}}, {"pipedream", {}}};
  for (std::size_t r = 0; r < gpipe_s.size(); ++r) {
    three_s["1f1b"].push_back(gpipe_s[r] / (r == 0 ? 0.9 : 1.04));
    three_s["pipedream"].push_back(1.5 * gpipe_s[r]);
  }
  std::vector<double> gpipe_over_1f1b;
  for (std::size_t r = 0; r < gpipe_s.size(); ++r) gpipe_over_1f1b.push_back(gpipe_s[r] / three_s["1f1b"][r]);
  CHECK(median_differs_from(gpipe_over_1f1b, 1.0, 0.05));       // 1.04 to 1.04
  CHECK_FALSE(median_differs_from(gpipe_over_1f1b, 1.0, 0.05 / 3));  // 0.9 to 1.04
  ValidationOptions three = options;
  three.schedules = {"gpipe", "1f1b", "pipedream"};
  const Predictor predict_three = [](const TaskGraph& g) {
    Result r = evaluate(g);
    r.iteration_s = g.schedule == "gpipe" ? 1.1 : g.schedule == "1f1b" ? 1.0 : 1.5;
    return r;
  };
  const ValidationReport family = validate(config, data, three, predict_three, scripted_steps(three_s));
  CHECK(family.separable_pairs.at(1) == std::pair<int, int>{2, 3});
  CHECK(family.separable_kendall_tau.at(1) == doctest::Approx(1.0));
}

TEST_CASE("validation counts the pairs of schedules in the predicted order, against it, and predicted alike") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.schedules = {"gpipe", "1f1b", "pipedream"};
  options.processors = {1};
  options.runs = 3;
  // Predicted: gpipe and 1f1b alike (1.0), pipedream faster (0.9). Measured in every round: gpipe
  // 1.0, 1f1b 3% slower, pipedream 1.2. So gpipe-1f1b is a tie of the prediction, 3% apart in the
  // runs, and both pairs with pipedream are against the predicted order; tau-b is
  // (0 - 2) / sqrt(2 x 3) = -0.816.
  const auto every_round = [](double gpipe_s, double f1b_s, double pipedream_s) {
    return scripted_steps({{"gpipe", std::vector<double>(3, gpipe_s)},
                           {"1f1b", std::vector<double>(3, f1b_s)},
                           {"pipedream", std::vector<double>(3, pipedream_s)}});
  };
  const Predictor predict = [](const TaskGraph& g) {
    Result r = evaluate(g);
    r.iteration_s = g.schedule == "pipedream" ? 0.9 : 1.0;
    return r;
  };
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const ValidationReport report = validate(config, data, options, predict, every_round(1.0, 1.03, 1.2));
  REQUIRE(report.same_program_schedules.count(1) == 0);  // three programs at one processor
  const ValidationReport::PairOrder& order = report.pair_order.at(1);
  CHECK(order.in_order == 0);
  CHECK(order.against == 2);
  CHECK(order.predicted_equal == 1);
  CHECK(order.measured_equal == 0);
  CHECK(order.widest_predicted_equal_gap == doctest::Approx(0.03));
  CHECK(report.kendall_tau.at(1) == doctest::Approx(-2 / std::sqrt(6.0)));
  // Pipedream measured fastest instead: both its pairs in the predicted order.
  const ValidationReport ordered = validate(config, data, options, predict, every_round(1.0, 1.03, 0.95));
  CHECK(ordered.pair_order.at(1).in_order == 2);
  CHECK(ordered.pair_order.at(1).against == 0);
  CHECK(ordered.pair_order.at(1).predicted_equal == 1);
}

TEST_CASE("a median's exact interval: the sign test, with too few values never clear") {
  // Every value above 1: the sign test's p-value is 2 / 2^n (all n on one side by chance).
  const auto above = [](int n) { return std::vector<double>(static_cast<std::size_t>(n), 1.04); };
  CHECK_FALSE(median_differs_from(above(2), 1.0, 0.05));  // 2 / 4: two rounds say nothing at 95%
  CHECK_FALSE(median_differs_from(above(5), 1.0, 0.05));  // 2 / 32 = 0.0625
  CHECK(median_differs_from(above(6), 1.0, 0.05));        // 2 / 64 = 0.031
  // 15 pairs at 5% / 15 = 0.00333: 2 / 512 = 0.0039 is too much, 2 / 1024 = 0.00195 is not.
  CHECK_FALSE(median_differs_from(above(9), 1.0, 0.05 / 15));
  CHECK(median_differs_from(above(10), 1.0, 0.05 / 15));
  // Sixteen values at 5% / 15: 2 P(B <= 1) = 34 / 65536 passes, 2 P(B <= 2) = 274 / 65536 does
  // not, so the interval is [x_(2), x_(15)]: one value below 1 leaves it clear, two do not.
  std::vector<double> sixteen = above(16);
  sixteen[3] = 0.9;
  CHECK(median_differs_from(sixteen, 1.0, 0.05 / 15));
  sixteen[7] = 0.95;
  CHECK_FALSE(median_differs_from(sixteen, 1.0, 0.05 / 15));
  // Below as above, and the order of the values does not matter.
  CHECK(median_differs_from({0.97, 0.9, 0.95, 0.99, 0.93, 0.96}, 1.0, 0.05));
  CHECK_THROWS_AS(median_differs_from(above(6), 1.0, 0), Error);
}

TEST_CASE("validation ties schedules that run one program in the measured order too") {
  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.schedules = {"sequential", "1f1b", "pipedream"};
  options.processors = {1};
  options.runs = 9;
  // At one processor sequential and 1f1b run one program (same_program); their runs differ by
  // noise only, here 1f1b 4% slower in every round, an order the rounds would know. Pipedream,
  // predicted slower (an update per microbatch), runs 20% slower.
  const std::vector<double> sequential_s = {1.0, 1.3, 0.8, 1.15, 0.9, 1.05, 0.85, 1.2, 0.95};
  std::map<std::string, std::vector<double>> script_s = {{"sequential", sequential_s}};
  for (const double s : sequential_s) {
    script_s["1f1b"].push_back(1.04 * s);
    script_s["pipedream"].push_back(1.2 * s);
  }
  const GraphConfig config = config_for(kMlp, "sequential", 1, 2, 2);
  const ValidationReport report =
      validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, scripted_steps(script_s));
  REQUIRE(report.rows.size() == 3);
  REQUIRE(report.rows[0].predicted_step_s == report.rows[1].predicted_step_s);
  REQUIRE(report.rows[2].predicted_step_s > report.rows[0].predicted_step_s);
  CHECK(report.rows[1].measured_step_s > report.rows[0].measured_step_s);  // kept as measured in the rows
  CHECK(report.same_program_schedules.at(1) == std::vector<std::vector<std::string>>{{"sequential", "1f1b"}});
  // Tied both ways, the other two pairs concordant: 2 / sqrt(2 x 2). Counted as measured, the
  // tie in the prediction alone would give 2 / sqrt(2 x 3).
  CHECK(report.kendall_tau.at(1) == doctest::Approx(1.0));
  // The pair that runs one program is in no count of the pairs' order.
  CHECK(report.pair_order.at(1).in_order == 2);
  CHECK(report.pair_order.at(1).against + report.pair_order.at(1).predicted_equal + report.pair_order.at(1).measured_equal == 0);
  CHECK(report.separable_pairs.at(1) == std::pair<int, int>{2, 3});  // not the pair with no order
  CHECK(report.separable_kendall_tau.at(1) == doctest::Approx(1.0));
}

TEST_CASE("each round of validation runs its configurations in its own order, the same for one seed") {
  // Six schedules, each a block of two configurations (P = 1, 2), 400 rounds: each order a
  // permutation whose blocks stay together, the same when asked again, and every configuration
  // in every place about equally often (400 / 12 = 33.3 each; a fixed order would put each in one
  // place 400 times).
  const std::vector<std::size_t> blocks(6, 2);
  constexpr std::size_t count = 12;
  std::vector<std::vector<int>> times_at(count, std::vector<int>(count, 0));  // [configuration][place]
  std::set<std::vector<std::size_t>> orders;
  for (int round = 0; round < 400; ++round) {
    const auto order = run_order(blocks, 7, round);
    CHECK(order == run_order(blocks, 7, round));
    REQUIRE(order.size() == count);
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < count; ++i) REQUIRE(sorted[i] == i);
    for (std::size_t place = 0; place < count; place += 2) CHECK(order[place] / 2 == order[place + 1] / 2);
    for (std::size_t place = 0; place < count; ++place) ++times_at[order[place]][place];
    orders.insert(order);
  }
  for (const auto& places : times_at) {
    for (const int times : places) {
      CHECK(times >= 15);  // Binomial(400, 1/12): mean 33.3, standard deviation 5.5; 15 and 55 are over 3 out
      CHECK(times <= 55);
    }
  }
  CHECK(orders.size() > 390);  // 6! 2^6 = 46080 orders: few repeats in 400
  CHECK(run_order(blocks, 7, 0) != run_order(blocks, 8, 0));  // another seed, other orders
  CHECK(run_order({}, 7, 0).empty());
  // Blocks of other sizes (a schedule without its own baseline row, or more processor counts).
  const auto uneven = run_order({1, 3, 2}, 7, 5);
  std::vector<std::size_t> block_of;
  for (const std::size_t c : uneven) block_of.push_back(c == 0 ? 0 : c <= 3 ? 1 : 2);
  std::vector<std::size_t> runs_of_blocks = {block_of[0]};
  for (std::size_t i = 1; i < block_of.size(); ++i) {
    if (block_of[i] != block_of[i - 1]) runs_of_blocks.push_back(block_of[i]);
  }
  CHECK(runs_of_blocks.size() == 3);  // each block in one piece
}

TEST_CASE("the median's 95% interval, and rounds added until the errors are known within the target") {
  // 1..20: Binomial(20, 1/2) puts 2.1% below rank 6 and 2.1% above rank 15, so the 6th and 16th
  // values bound the median (11, the upper middle) with about 96%: (16 - 6) / 2 / 11.
  std::vector<double> ranks;
  for (int i = 20; i >= 1; --i) ranks.push_back(i);
  CHECK(median_ci_half_width(ranks) == doctest::Approx(5.0 / 11.0));
  CHECK(std::isinf(median_ci_half_width({1.0})));

  const Dataset data = data_for(kMlp);
  ValidationOptions options;
  options.schedules = {"gpipe"};
  options.processors = {1};
  options.runs = 2;
  options.max_runs = 9;
  options.ci_target = 0.05;
  // A scripted machine: round r's runs take steps_s[(r * P_count + i) % size], i the
  // configuration's place in (P = 1, P = 2), whatever order the round runs them in.
  int calls = 0;
  const auto scripted = [&](std::vector<double> steps_s) {
    return Runner([&calls, &options, steps_s](const TaskGraph& g, const Network&, const BatchSampler&,
                                              const TrainingOptions&) {
      const auto counts = options.processors.size();
      const auto round = static_cast<std::size_t>(calls++) / counts;
      const auto place = static_cast<std::size_t>(
          std::find(options.processors.begin(), options.processors.end(), g.processor_count()) -
          options.processors.begin());
      TrainingRun run;
      run.result.iteration_s = steps_s[(round * counts + place) % steps_s.size()];
      return run;
    });
  };
  const auto predict = [](const TaskGraph& g) { return evaluate(g); };
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  // A steady machine: known exactly after the two runs asked for.
  CHECK(validate(config, data, options, predict, scripted({1.0})).rounds == 2);
  // A machine that alternates 1 s and 2 s: never within 5%, so all nine rounds.
  calls = 0;
  const ValidationReport noisy = validate(config, data, options, predict, scripted({1.0, 2.0}));
  CHECK(noisy.rounds == 9);
  CHECK(calls == 9);
  CHECK(noisy.error_ci > 0.05);
  // Each configuration steady within 2%, but the two moving against each other: the speedup
  // (1.0 / 0.52, then 1.04 / 0.5) swings by 4%, more than the 3% target, so all nine rounds.
  options.processors = {1, 2};
  options.ci_target = 0.03;
  calls = 0;
  const ValidationReport swinging = validate(config, data, options, predict, scripted({1.0, 0.52, 1.04, 0.5}));
  CHECK(swinging.rounds == 9);
  REQUIRE(swinging.rows.size() == 2);
  for (const auto& row : swinging.rows) CHECK(row.error_ci <= 0.03);
  const double low = 1.0 / 0.52, high = 1.04 / 0.5;  // the measured speedups; nine rounds span both
  const double s = swinging.rows[1].predicted_speedup;
  CHECK(swinging.rows[1].speedup_error_ci == doctest::Approx((s / low - s / high) / 2 / (s / low)));
  CHECK(swinging.speedup_error_ci == doctest::Approx(swinging.rows[1].speedup_error_ci));
  // Moving together, the speedup is known at once: the two rounds asked for.
  calls = 0;
  CHECK(validate(config, data, options, predict, scripted({1.0, 0.5, 1.04, 0.52})).rounds == 2);
  options.processors = {1};
  options.ci_target = 0.05;
  options.max_runs = 1;
  CHECK_THROWS_AS(validate(config, data, options, predict, scripted({1.0})), Error);
  options.max_runs = 0;
  options.processors = {0};
  CHECK_THROWS_WITH_AS(validate(config, data, options, predict, scripted({1.0})),
                       "validate: processor counts must be at least 1, got 0", Error);
}

namespace {

// gpipe at P = 1 and 2, `runs` rounds.
ValidationOptions gpipe_at_one_and_two(int runs) {
  ValidationOptions options;
  options.schedules = {"gpipe"};
  options.processors = {1, 2};
  options.runs = runs;
  return options;
}

// How busy the other processor is while one works, from `graph`'s evaluation: the processors'
// tasks' pairwise overlaps (a task with itself included) over their busy time, minus 1. A second
// way to busy_concurrency's sweep over start and end events, for two processors.
double pairwise_overlap(const TaskGraph& graph) {
  const Result predicted = evaluate(graph);
  double overlap = 0, busy = 0;
  for (const auto& a : graph.tasks) {
    if (a.placement != Placement::processor) continue;
    const TaskTiming& ta = predicted.tasks[static_cast<std::size_t>(a.id)];
    busy += static_cast<double>(ta.end_cycles - ta.start_cycles);
    for (const auto& b : graph.tasks) {
      if (b.placement != Placement::processor) continue;
      const TaskTiming& tb = predicted.tasks[static_cast<std::size_t>(b.id)];
      overlap += static_cast<double>(
          std::max<std::int64_t>(0, std::min(ta.end_cycles, tb.end_cycles) - std::max(ta.start_cycles, tb.start_cycles)));
    }
  }
  return overlap / busy - 1;
}

// A machine that runs every graph as the analytic evaluator predicts it.
Runner runs_as_predicted() {
  return [](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    run.result = evaluate(g);
    return run;
  };
}

// A table whose layers take k times 1, 2, 3 and 4 ms and 0.1 ms.
Calibration scaled_calibration(const Network& network, const GraphConfig& config, double k) {
  Calibration c;
  c.samples = network.batch / config.microbatches;
  for (const auto& layer : network.layers) c.layers[layer.name] = {k * 1e-3, k * 2e-3, k * 3e-3, k * 4e-3, k * 1e-4};
  return c;
}

}  // namespace

TEST_CASE("validation calibrates before each round, predicts the rounds' median, and replays each run's task times") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(3);
  // Three rounds on a machine whose speed changes: every layer's times 1x, 3x, then 2x alone, and
  // a quarter more with two copies at once.
  const std::vector<double> scale = {1, 3, 2};
  const double co_run = 1.25;
  auto calibration_at = [&](double k) { return scaled_calibration(network, config, k); };
  std::vector<std::string> events;
  int rounds = 0;
  bool warmed_up = false;
  options.calibrate = [&](int processors) {
    if (!warmed_up) {  // the first calibration warms the process: a 100x table, not kept
      warmed_up = true;
      events.push_back("warm up " + std::to_string(processors));
      return calibration_at(100);
    }
    events.push_back("calibrate " + std::to_string(processors));
    if (processors == 1) ++rounds;
    return calibration_at(scale.at(rounds - 1) * (processors == 2 ? co_run : 1.0));
  };
  // The machine runs each task in 1.5 times the graph's cost: its measured run is the evaluator's
  // schedule of the graph with every cost scaled so.
  const Runner slower = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    events.push_back("run");
    TaskGraph scaled = g;
    for (auto& t : scaled.tasks) t.cost_cycles = t.cost_cycles * 3 / 2;
    TrainingRun run;
    run.result = evaluate(scaled);
    // An executor's transfer is timed from its copy's start: the handoffs (the link's latency)
    // fall outside it.
    for (const auto& t : scaled.tasks) {
      if (t.placement == Placement::link) run.result.tasks[static_cast<std::size_t>(t.id)].start_cycles += g.links[static_cast<std::size_t>(t.resource)].latency_cycles;
    }
    return run;
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, slower);
  // Each round: a table per processor count, then the round's configurations (gpipe at P = 1, 2;
  // P=1 serves both rows).
  std::vector<std::string> expected_events{"warm up 1"};
  for (int r = 0; r < 3; ++r) {
    for (const char* event : {"calibrate 1", "calibrate 2", "run", "run"}) expected_events.push_back(event);
  }
  CHECK(events == expected_events);
  CHECK(report.calibrations == 6);
  CHECK(report.co_run_slowdown.at(2) == doctest::Approx(co_run - 1));
  // Calibrated steps 1x, 3x, 2x: drift last / first - 1 = 1, spread (3 - 1) / 2 over the median 2.
  CHECK(report.calibration_drift == doctest::Approx(1.0));
  CHECK(report.calibration_spread == doctest::Approx(0.5));
  REQUIRE(report.rows.size() == 2);
  for (const auto& row : report.rows) {
    CAPTURE(row.processors);
    // The prediction is the median over the rounds: the 2x calibration's. At P = 2, between the
    // table taken alone (2x) and the one with two copies at once (2.5x), by how often the other
    // processor is busy while one is: from the schedule predicted with the table taken alone,
    // summed pairwise overlaps of the processors' tasks over their busy time, minus 1.
    GraphConfig at = config;
    at.processors = row.processors;
    double weight = 0;
    if (row.processors == 2) {
      at.calibration = std::make_shared<const Calibration>(calibration_at(2));
      weight = pairwise_overlap(make_graph(at));
      CHECK(weight > 0.1);  // gpipe's two stages overlap
      CHECK(weight < 1);
    }
    CHECK(row.co_run_weight == doctest::Approx(weight));
    at.calibration = std::make_shared<const Calibration>(calibration_at(2 * (1 + (co_run - 1) * weight)));
    CHECK(row.predicted_step_s == doctest::Approx(evaluate(make_graph(at)).iteration_s));
    // The replay of a run's own task times reproduces that run's step.
    CHECK(row.replayed_step_s == doctest::Approx(row.measured_step_s));
    CHECK(row.replay_error == doctest::Approx(0.0).epsilon(1e-9));
  }
  CHECK(report.mean_abs_replay_error == doctest::Approx(0.0).epsilon(1e-9));
}

TEST_CASE("validation runs warm-up rounds it does not keep and hands each kept round's tables over") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(2);
  options.warmup_rounds = 2;
  // The process's own warm-up table, then two warm-up rounds' (P = 1 and 2 each) at 5x, then the
  // kept rounds' at 1x; the warm-up rounds' runs take 10 s, the kept ones 2 s at P = 1, 1 s at 2.
  int calibrations = 0;
  options.calibrate = [&](int) { return scaled_calibration(network, config, ++calibrations <= 5 ? 5.0 : 1.0); };
  std::vector<std::pair<int, int>> handed;  // (round, processors)
  options.on_calibration = [&](int round, int processors, const Calibration& table) {
    handed.emplace_back(round, processors);
    CHECK(calibrated_step_s(table) == doctest::Approx(calibrated_step_s(scaled_calibration(network, config, 1.0))));
  };
  int runs = 0;
  const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    run.result.iteration_s = ++runs <= 4 ? 10.0 : (g.processors.size() == 2 ? 1.0 : 2.0);
    return run;
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
  CHECK(runs == 8);           // 2 warm-up rounds and 2 kept, 2 configurations each
  CHECK(calibrations == 9);   // the process's warm-up, then P = 1 and 2 in each of 4 rounds
  CHECK(report.rounds == 2);
  CHECK(handed == std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 1}, {1, 2}});
  CHECK(report.calibration_drift == doctest::Approx(0.0));  // the kept tables alike; the 5x ones forgotten
  REQUIRE(report.rows.size() == 2);
  for (const auto& row : report.rows) {
    CAPTURE(row.processors);
    CHECK(row.measured_step_s == doctest::Approx(row.processors == 1 ? 2.0 : 1.0));
    CHECK(row.measured_rounds_s.size() == 2);
    GraphConfig at = config;
    at.processors = row.processors;
    at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.0));
    CHECK(row.predicted_step_s == doctest::Approx(evaluate(make_graph(at)).iteration_s));
  }
}

TEST_CASE("validation asked to stop ends its rounds there and reports those done") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  ValidationOptions options = gpipe_at_one_and_two(6);
  options.warmup_rounds = 1;
  int runs = 0;
  const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    ++runs;
    run.result.iteration_s = g.processors.size() == 2 ? 1.0 : 2.0;
    return run;
  };
  const Predictor predict = [](const TaskGraph& g) { return evaluate(g); };
  // Asked before each round from the second kept one on, never during the warm-up or the first.
  int asked = 0;
  options.stop_requested = [&] { return ++asked == 3; };
  ValidationReport report = validate(config, data, options, predict, runner);
  CHECK(asked == 3);
  CHECK(runs == 2 * (1 + 3));  // the warm-up round and three kept ones, two configurations each
  CHECK(report.rounds == 3);
  CHECK(report.stopped_early);
  for (const auto& row : report.rows) CHECK(row.measured_rounds_s.size() == 3);
  CHECK(validation_summary_json(report)["stopped_early"] == true);
  // Asked at once: the first kept round is taken all the same.
  options.stop_requested = [] { return true; };
  runs = 0;
  report = validate(config, data, options, predict, runner);
  CHECK(runs == 2 * 2);
  CHECK(report.rounds == 1);
  CHECK(report.stopped_early);
  // Never asked to: every round, and the report says so.
  options.stop_requested = [] { return false; };
  report = validate(config, data, options, predict, runner);
  CHECK(report.rounds == 6);
  CHECK_FALSE(report.stopped_early);
  CHECK(validation_summary_json(report)["stopped_early"] == false);
  // A time limit: runs of 30 ms make a round at least 60 ms, so that by the second kept round
  // (at least 120 ms in, the warm-up round's included) another round would end past 0.15 s
  // however fast the machine; one far off takes every round.
  const Runner slow = [&](const TaskGraph& g, const Network& network, const BatchSampler& sampler,
                          const TrainingOptions& training) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return runner(g, network, sampler, training);
  };
  std::vector<std::string> said;
  options.progress = [&](const std::string& line) { said.push_back(line); };
  options.time_limit_s = 0.15;
  report = validate(config, data, options, predict, slow);
  CHECK(report.rounds == 1);
  CHECK(report.stopped_early);
  REQUIRE_FALSE(said.empty());
  CHECK(said.back().find("time limit 0.15 s: another round") == 0);
  options.time_limit_s = 1e6;
  report = validate(config, data, options, predict, slow);
  CHECK(report.rounds == 6);
  CHECK_FALSE(report.stopped_early);
  options.time_limit_s = -1;
  CHECK_THROWS_WITH(validate(config, data, options, predict, slow),
                    "validate: the time limit must be at least 0 seconds (0: none)");
}
TEST_CASE("validation takes a calibration or a run again when the machine's speed read beside it is off its usual") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(2);
  // A machine whose fixed work takes 1 s, but 1.3 s in the reading right after the first kept
  // calibration for 2 processors and after the second run: both taken while a neighbour slowed it.
  bool slow_next = false;
  int readings = 0;
  options.read_machine = [&] {
    ++readings;
    const double seconds = slow_next ? 1.3 : 1.0;
    slow_next = false;
    return std::vector<double>{seconds};
  };
  int calibrations = 0;
  options.calibrate = [&](int processors) {
    ++calibrations;
    if (calibrations == 3) {  // the process's warm-up, round 1 at P = 1, then this one at P = 2
      REQUIRE(processors == 2);
      slow_next = true;
    }
    return scaled_calibration(network, config, 1.0);
  };
  int runs = 0;
  const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    run.result.iteration_s = g.processors.size() == 2 ? 1.0 : 2.0;
    if (++runs == 2) {
      slow_next = true;
      run.result.iteration_s = 9.0;  // the slowed run's step
    }
    return run;
  };
  const auto steps_measured = [](const ValidationReport& report) {
    std::vector<double> steps;
    for (const auto& row : report.rows) steps.insert(steps.end(), row.measured_rounds_s.begin(), row.measured_rounds_s.end());
    return steps;
  };
  SUBCASE("taken again, the retake kept") {
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
    CHECK(calibrations == 6);  // warm-up, then P = 1 and 2 in each of 2 rounds, and one retake
    CHECK(runs == 5);          // 2 configurations in 2 rounds, and one retake
    REQUIRE(report.machine_state.has_value());
    const auto& m = *report.machine_state;
    CHECK(m.readings == readings);
    CHECK(m.readings == 2 * (4 + 1 + 4 + 1));  // before and after each kept calibration and run, and each retake
    CHECK(m.retaken_calibrations == 1);
    CHECK(m.retaken_runs == 1);
    CHECK(m.kept_off_calibrations == 0);
    CHECK(m.kept_off_runs == 0);
    CHECK(m.off_fraction == doctest::Approx(2.0 / 20));
    CHECK(m.usual_s == std::vector<double>{1.0});
    for (const double step_s : steps_measured(report)) CHECK(step_s != 9.0);
    CHECK(report.calibrations == 4);  // the kept tables: a retake replaces its first try
  }
  SUBCASE("without retakes, kept and counted") {
    options.machine_retakes = 0;
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
    CHECK(calibrations == 5);
    CHECK(runs == 4);
    REQUIRE(report.machine_state.has_value());
    CHECK(report.machine_state->retaken_runs == 0);
    CHECK(report.machine_state->kept_off_calibrations == 1);
    CHECK(report.machine_state->kept_off_runs == 1);
    const std::vector<double> steps = steps_measured(report);
    CHECK(std::count(steps.begin(), steps.end(), 9.0) == 1);
  }
  SUBCASE("a tolerance wider than the jump takes nothing again") {
    options.machine_tolerance = 0.5;
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
    CHECK(runs == 4);
    CHECK(report.machine_state->retaken_runs + report.machine_state->retaken_calibrations == 0);
    CHECK(report.machine_state->off_fraction == 0);
  }
}

TEST_CASE("validation takes a table for two processors again when its co-run slowdown is off its peers'") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(6);
  options.table_tolerance = 0;  // the one-processor tables' own speeds are this test's to set
  // Per round, how fast the machine runs a layer alone (its one-processor table's scale), and the
  // tries of its two-processor table, each over that scale (1.1: the usual co-run slowdown).
  const std::vector<double> alone = {1, 2, 1, 1.5, 1, 1};
  const std::vector<std::vector<double>> together = {
      {1.1}, {1.1},
      {1.65},              // 1.5x its peers, but with two earlier rounds only: not judged
      {1.32},              // 1.2x the median of 1.1, 1.1 and 1.65: within 25%
      {1.76, 1.76, 1.1},   // 1.33x the (upper) median of 1.1, 1.1, 1.32 and 1.65: twice again
      {1.76, 1.76, 1.76},  // 1.6x that of those and 1.1: again until the retakes run out, the last kept
  };
  int calibrations = 0, round = -1, attempt = 0;
  options.calibrate = [&](int processors) {
    ++calibrations;
    if (calibrations == 1) return scaled_calibration(network, config, 1.0);  // the process's warm-up
    if (processors == 1) {
      ++round;
      attempt = 0;
      return scaled_calibration(network, config, alone.at(static_cast<std::size_t>(round)));
    }
    const auto r = static_cast<std::size_t>(round);
    return scaled_calibration(network, config, alone.at(r) * together.at(r).at(static_cast<std::size_t>(attempt++)));
  };
  std::map<int, double> kept_scale;  // per round, the kept two-processor table's scale
  options.on_calibration = [&](int r, int processors, const Calibration& c) {
    if (processors == 2) kept_scale[r] = c.layers.begin()->second.forward_s / 1e-3;
  };
  SUBCASE("judged from the fourth round") {
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted());
    CHECK(calibrations == 1 + 2 * 6 + 4);
    CHECK(report.retaken_tables == std::map<int, int>{{2, 4}});
    CHECK(report.kept_off_tables == std::map<int, int>{{2, 1}});
    CHECK(report.calibrations == 12);
    CHECK(kept_scale.at(2) == doctest::Approx(1.65));
    CHECK(kept_scale.at(3) == doctest::Approx(1.5 * 1.32));
    CHECK(kept_scale.at(4) == doctest::Approx(1.1));
    CHECK(kept_scale.at(5) == doctest::Approx(1.76));
    // The rounds' co-run slowdowns as kept, 1.1 1.1 1.65 1.32 1.1 1.76: their upper median, 1.32.
    CHECK(report.co_run_slowdown.at(2) == doctest::Approx(0.32));
  }
  SUBCASE("a tolerance of 0 judges none") {
    options.co_run_tolerance = 0;
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted());
    CHECK(calibrations == 1 + 2 * 6);
    CHECK(report.retaken_tables.empty());
    CHECK(report.kept_off_tables.empty());
    CHECK(kept_scale.at(4) == doctest::Approx(1.76));
  }
  SUBCASE("a negative tolerance is refused") {
    options.co_run_tolerance = -0.1;
    CHECK_THROWS_WITH_AS(validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted()),
                         "validate: the co-run tolerance must be at least 0 (0: none judged)", Error);
  }
}

TEST_CASE("validation takes a one-processor table again when its minibatch is off its peers'") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options;
  options.schedules = {"gpipe"};
  options.processors = {1};
  options.runs = 6;
  // Per round, the tries of its one-processor table, each a scale of every layer's times.
  const std::vector<std::vector<double>> tries = {
      {1.0}, {1.3},
      {1.5},               // 1.15x the (upper) median of 1.0 and 1.3, but two earlier rounds judge nothing
      {1.09},              // under that of 1.0, 1.3 and 1.5
      {1.6, 1.0},          // 1.23x that of 1.0, 1.3, 1.5 and 1.09: again
      {1.3, 1.25, 1.22},   // 1.19x, 1.15x and 1.12x that of those and 1.0 (1.09): the last kept
  };
  // One run per round: a try taken after more runs than the last is the next round's first.
  int calibrations = 0, runs = 0, runs_at_last_try = -1, attempt = 0;
  options.calibrate = [&](int processors) {
    REQUIRE(processors == 1);
    if (++calibrations == 1) return scaled_calibration(network, config, 1.0);  // the process's warm-up
    if (runs != runs_at_last_try) attempt = 0;
    runs_at_last_try = runs;
    return scaled_calibration(network, config, tries.at(static_cast<std::size_t>(runs)).at(static_cast<std::size_t>(attempt++)));
  };
  std::map<int, double> kept_scale;  // per round, the kept table's scale
  options.on_calibration = [&](int r, int, const Calibration& c) { kept_scale[r] = c.layers.begin()->second.forward_s / 1e-3; };
  const Runner runner = [&](const TaskGraph& g, const Network& n, const BatchSampler& b, const TrainingOptions& o) {
    ++runs;
    return runs_as_predicted()(g, n, b, o);
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
  CHECK(calibrations == 1 + 6 + 3);
  CHECK(report.retaken_tables == std::map<int, int>{{1, 3}});
  CHECK(report.kept_off_tables == std::map<int, int>{{1, 1}});
  CHECK(kept_scale.at(2) == doctest::Approx(1.5));
  CHECK(kept_scale.at(3) == doctest::Approx(1.09));
  CHECK(kept_scale.at(4) == doctest::Approx(1.0));
  CHECK(kept_scale.at(5) == doctest::Approx(1.22));
  options.table_tolerance = -0.1;
  CHECK_THROWS_WITH_AS(validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner),
                       "validate: the table tolerance must be at least 0 (0: none judged)", Error);
}

TEST_CASE("validation without machine readings reports no machine state") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const ValidationReport report = validate(config, data, gpipe_at_one_and_two(1), [](const TaskGraph& g) { return evaluate(g); },
                                           scripted_steps({{"gpipe", {2.0, 1.0}}}));
  CHECK_FALSE(report.machine_state.has_value());
}

TEST_CASE("validation prices each link's transfers: measured durations over the copy and the round trip") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(1);
  // A table with a copy bandwidth, a latency of 80 us and handoffs of 30 us timed apart: a link's
  // round trip is 80 - 2 x 30 = 20 us, and the handoffs lie outside what the link holds.
  options.calibrate = [&](int) {
    Calibration table = scaled_calibration(network, config, 1.0);
    table.copy_bytes_per_s = 1e9;
    table.copy_latency_s = 8e-5;
    table.handoff_s = 3e-5;
    return table;
  };
  // Processor tasks run their cost; each transfer holds its link three times the copy and the
  // round trip. The first step's tasks, left out of the errors (as the step time leaves it out),
  // take 5 times as long (a GPU's first step allocates).
  std::int64_t round_trip_cycles = -1;
  const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    run.result = evaluate(g);
    for (const auto& t : g.tasks) {
      TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
      const std::int64_t first_step = t.minibatch == 0 ? 5 : 1;
      if (t.placement != Placement::link) {
        time.end_cycles = time.start_cycles + first_step * t.cost_cycles;
        continue;
      }
      const LinkInfo& link = g.links[static_cast<std::size_t>(t.resource)];
      round_trip_cycles = link.latency_cycles - link.wake_cycles - link.delivery_cycles;
      time.end_cycles = time.start_cycles + first_step * 3 * (t.cost_cycles + round_trip_cycles);
    }
    return run;
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
  const auto& row = report.rows.at(1);
  REQUIRE(row.processors == 2);
  // The handoffs were timed apart: the round trip is less than the whole latency.
  CHECK(round_trip_cycles > 0);
  int links = 0;
  for (const auto& each_part_error : row.task_time_error_by_part) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& part = each_part_error.first;
    const auto& error = each_part_error.second;
    CAPTURE(part);
    if (part.front() == 'l') {
      ++links;
      CHECK(error == doctest::Approx(2.0));
    } else {
      CHECK(error == doctest::Approx(0.0));
    }
  }
  CHECK(links == 2);  // gpipe's forward and backward links
  CHECK(row.task_time_error == doctest::Approx(0.0));  // the processors' tasks alone
}

TEST_CASE("validation's median task error is the typical task's, which a few stalled tasks leave alone") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 3);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(1);
  options.calibrate = [&](int) { return scaled_calibration(network, config, 1.0); };
  // Processor tasks run their cost but every fifth after the first step, stalled 20 times as long
  // (a host thread that lost its CPU); the first step's all 3 times as long.
  double expected_sum_error = -1;  // at P = 2: the stalled tasks' excess over all costs, found here
  const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;
    run.result = evaluate(g);
    double costs = 0, excess = 0;
    for (const auto& t : g.tasks) {
      if (t.placement != Placement::processor) continue;
      TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
      std::int64_t factor = 1;
      if (t.minibatch == 0) factor = 3;
      if (t.minibatch > 0 && t.id % 5 == 0) factor = 20;
      time.end_cycles = time.start_cycles + factor * t.cost_cycles;
      if (t.minibatch > 0) {
        costs += static_cast<double>(t.cost_cycles);
        excess += static_cast<double>((factor - 1) * t.cost_cycles);
      }
    }
    if (g.processor_count() == 2) expected_sum_error = excess / costs;
    return run;
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
  for (const auto& row : report.rows) {
    CAPTURE(row.processors);
    CHECK(row.median_task_time_error == doctest::Approx(0.0));
  }
  REQUIRE(expected_sum_error > 0.5);
  CHECK(report.rows.at(1).task_time_error == doctest::Approx(expected_sum_error));
}

TEST_CASE("validation groups the task time error by the wait before each task, as the run had it") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 3);
  const Network network = make_request(config).network;
  // Without a wait curve, and with one: then each task's price is its cost plus what the curve
  // charges the wait it had in the run for its bytes (linear from nothing at no wait, held beyond
  // the last point; worked out here from the curve in seconds), and the row reports what the
  // prediction charged per step.
  const std::vector<std::pair<double, double>> curve = {{0.001, 2e-8}, {0.02, 1e-7}};
  const auto charge_s = [&](double wait_s, std::int64_t bytes) {
    if (!(wait_s > 0)) return 0.0;
    const double per_byte_s = wait_s >= 0.02 ? 1e-7 : wait_s <= 0.001 ? 2e-8 * wait_s / 0.001
                                                                       : 2e-8 + (1e-7 - 2e-8) * (wait_s - 0.001) / (0.02 - 0.001);
    return per_byte_s * static_cast<double>(bytes);
  };
  for (const bool with_curve : {false, true}) {
    CAPTURE(with_curve);
    ValidationOptions options = gpipe_at_one_and_two(1);
    options.calibrate = [&](int) {  // tasks of 1-4 ms
      Calibration c = scaled_calibration(network, config, 1.0);
      if (with_curve) c.wait_curve.extra_s_per_byte = curve;
      return c;
    };
    // Processor tasks start where the prediction has them and run their cost, three times it where
    // their id is odd. Found here, from the run as laid out, per wait group at P = 2: the counted
    // tasks' (after the first step) measured time over their price, minus 1; and what the
    // prediction charged per step.
    std::map<std::string, double> expected;
    double expected_wait_loss_s = 0;
    const Runner runner = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
      TrainingRun run;
      run.result = evaluate(g);
      const Result predicted = run.result;
      for (const auto& t : g.tasks) {
        if (t.placement != Placement::processor) continue;
        TaskTiming& time = run.result.tasks[static_cast<std::size_t>(t.id)];
        time.end_cycles = time.start_cycles + (t.id % 2 == 1 ? 3 : 1) * t.cost_cycles;
      }
      if (g.processor_count() != 2) return run;
      REQUIRE(g.wait_loss.empty() != with_curve);
      std::map<std::string, double> measured, prices;
      double predicted_charges_s = 0;
      for (std::int32_t p = 0; p < 2; ++p) {
        for (const Result* timing : {static_cast<const Result*>(&run.result), &predicted}) {
          std::vector<const Task*> on;  // p's tasks by their start
          for (const auto& t : g.tasks) {
            if (t.placement == Placement::processor && t.resource == p) on.push_back(&t);
          }
          std::sort(on.begin(), on.end(), [&](const Task* a, const Task* b) {
            return timing->tasks[static_cast<std::size_t>(a->id)].start_cycles < timing->tasks[static_cast<std::size_t>(b->id)].start_cycles;
          });
          for (std::size_t i = 1; i < on.size(); ++i) {
            if (on[i]->minibatch < 1) continue;
            const TaskTiming& time = timing->tasks[static_cast<std::size_t>(on[i]->id)];
            const double wait_s = static_cast<double>(time.start_cycles - timing->tasks[static_cast<std::size_t>(on[i - 1]->id)].end_cycles) / g.clock_hz;
            const double charge = with_curve ? charge_s(wait_s, on[i]->wait_exposed_bytes) : 0.0;
            if (timing == &predicted) {
              predicted_charges_s += charge;
              continue;
            }
            const double wait_ms = 1e3 * wait_s;
            const std::string group = wait_ms < 0.5 ? "wait < 0.5 ms" : wait_ms < 5 ? "wait 0.5-5 ms" : wait_ms < 20 ? "wait 5-20 ms" : "wait >= 20 ms";
            measured[group] += static_cast<double>(time.end_cycles - time.start_cycles);
            prices[group] += static_cast<double>(on[i]->cost_cycles) + charge * g.clock_hz;
          }
        }
      }
      expected.clear();
      for (const auto& [group, cycles] : measured) expected[group] = cycles / prices[group] - 1;
      expected_wait_loss_s = predicted_charges_s / static_cast<double>(g.minibatches - 1);
      return run;
    };
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runner);
    const auto& by_wait = report.rows.at(1).task_time_error_by_wait;
    REQUIRE(expected.size() >= 2);  // the run has tasks right after others and after waits
    CHECK(by_wait.size() == expected.size());
    for (const auto& each : expected) {
      CAPTURE(each.first);
      REQUIRE(by_wait.count(each.first) == 1);
      CHECK(by_wait.at(each.first) == doctest::Approx(each.second).epsilon(1e-6));
    }
    if (with_curve) {
      CHECK(expected_wait_loss_s > 0);  // the prediction's processors waited
      CHECK(report.rows.at(1).wait_loss_s == doctest::Approx(expected_wait_loss_s).epsilon(1e-6).scale(0));
    } else {
      CHECK(report.rows.at(1).wait_loss_s == 0);
    }
  }
}

TEST_CASE("validation takes a table timed in a P-processor pipeline by the row's overlap over that pipeline's") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 2);
  const Network network = make_request(config).network;
  // Each schedule's overlap at P = 2 with the table taken alone, found apart (pairwise_overlap).
  const auto overlap_of = [&](const std::string& schedule) {
    GraphConfig at = config_for(kMlp, schedule, 2, 4, 2);
    at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.0));
    return pairwise_overlap(make_graph(at));
  };
  const double pipeline_overlap = overlap_of("1f1b");
  REQUIRE(pipeline_overlap > 0.1);
  // Alone 1x; the pipeline's table 1.5x, marked as timed in a 2-processor 1f1b run, without a
  // co-run slope, or with its layers 20% slower per unit of overlap at a mean share of 0.6.
  for (const bool sloped : {false, true}) {
    CAPTURE(sloped);
    const double slope = 0.2, share = 0.6;
    ValidationOptions options;
    options.schedules = {"sequential", "gpipe", "1f1b", "pipedream"};
    options.processors = {1, 2};
    options.runs = 1;
    options.calibrate = [&](int processors) {
      Calibration c = scaled_calibration(network, config, processors == 2 ? 1.5 : 1.0);
      if (processors == 2) {
        c.concurrent = 2;
        c.pipeline_schedule = "1f1b";
        if (sloped) {
          c.co_run_slope = slope;
          c.co_run_share = share;
        }
      }
      return c;
    };
    const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted());
    REQUIRE(report.rows.size() == 8);
    for (const auto& row : report.rows) {
      CAPTURE(row.schedule);
      CAPTURE(row.processors);
      if (row.processors == 1) {
        CHECK(row.co_run_weight == 0);
        continue;
      }
      // At most 1: a row overlapping as much as 1f1b or more takes the pipeline's table whole.
      const double weight = std::min(1.0, overlap_of(row.schedule) / pipeline_overlap);
      CHECK(row.co_run_weight == doctest::Approx(weight));
      // Every table field linear in k: without a slope, the mix of the 1x and 1.5x tables is the
      // (1 + 0.5 w)x one; with it, the 1.5x table scaled by (1 + s o w) / (1 + s o).
      const double k = sloped ? 1.5 * (1 + slope * share * weight) / (1 + slope * share) : 1 + 0.5 * weight;
      GraphConfig at = config_for(kMlp, row.schedule, 2, 4, 2);
      at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, k));
      CHECK(row.predicted_step_s == doctest::Approx(evaluate(make_graph(at)).iteration_s));
      // One processor at a time but for the two stages' updates at the minibatch's end: near the
      // table taken alone. 1f1b is the pipeline the table was timed in; pipedream streams,
      // overlapping more.
      if (row.schedule == "sequential") CHECK(row.co_run_weight < 0.05);
      if (row.schedule == "sequential") CHECK(row.co_run_weight > 0);
      if (row.schedule == "gpipe") CHECK(row.co_run_weight > 0);
      if (row.schedule == "1f1b" || row.schedule == "pipedream") CHECK(row.co_run_weight == 1);
    }
  }
}

TEST_CASE("validation scales a row's table by the bytes its graph holds against those the table was timed at") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 2);
  const Network network = make_request(config).network;
  // A graph's footprint: its largest processor's step peak of what its tasks other than updates
  // hold, from the table taken alone.
  const auto footprint_of = [&](const std::string& schedule, int processors) {
    GraphConfig at = config_for(kMlp, schedule, processors, 4, 2);
    at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.0));
    std::int64_t bytes = 0;
    for (const std::int64_t peak : evaluate(make_graph(at)).step_compute_peak_memory_bytes) bytes = std::max(bytes, peak);
    return bytes;
  };
  const std::int64_t small = footprint_of("sequential", 1), large = footprint_of("gpipe", 1);
  REQUIRE(large > small);
  const double slowdown = 0.1;
  ValidationOptions options;
  options.schedules = {"sequential", "gpipe", "1f1b", "zb-h1"};
  options.processors = {1, 2};
  options.runs = 1;
  options.calibrate = [&](int) {  // the same table alone and for 2, timed at sequential's footprint
    Calibration c = scaled_calibration(network, config, 1.0);
    c.timed_footprint_bytes = small;
    c.footprint_slowdown = slowdown;
    c.footprint_small_bytes = small;
    c.footprint_large_bytes = large;
    return c;
  };
  const Runner as_predicted = runs_as_predicted();
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, as_predicted);
  REQUIRE(report.rows.size() == 8);
  for (const auto& row : report.rows) {
    CAPTURE(row.schedule);
    CAPTURE(row.processors);
    // Linear from 0 at sequential's footprint to 10% at one-processor gpipe's, held beyond.
    const double share = static_cast<double>(footprint_of(row.schedule, row.processors) - small) /
                         static_cast<double>(large - small);
    const double factor = 1 + slowdown * std::clamp(share, 0.0, 1.0);
    CHECK(row.footprint_factor == doctest::Approx(factor));
    GraphConfig at = config_for(kMlp, row.schedule, row.processors, 4, 2);
    at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, factor));
    CHECK(row.predicted_step_s == doctest::Approx(evaluate(make_graph(at)).iteration_s));
    if (row.processors == 1 && (row.schedule == "sequential" || row.schedule == "1f1b")) CHECK(row.footprint_factor == 1);
    if (row.processors == 1 && row.schedule == "gpipe") CHECK(row.footprint_factor == doctest::Approx(1.1));
  }
  // Without the measurement, nothing is scaled.
  options.calibrate = [&](int) { return scaled_calibration(network, config, 1.0); };
  for (const auto& row : validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, as_predicted).rows) {
    CHECK(row.footprint_factor == 1);
  }
}

TEST_CASE("validation scales rows by the median of the rounds' footprint slowdowns, not the last table's alone") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 2);
  const Network network = make_request(config).network;
  GraphConfig sequential_at = config_for(kMlp, "sequential", 1, 4, 2), gpipe_at = config_for(kMlp, "gpipe", 1, 4, 2);
  for (GraphConfig* at : {&sequential_at, &gpipe_at}) {
    at->calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.0));
  }
  const auto peak = [](const GraphConfig& at) {
    std::int64_t bytes = 0;
    for (const std::int64_t p : evaluate(make_graph(at)).step_compute_peak_memory_bytes) bytes = std::max(bytes, p);
    return bytes;
  };
  const std::int64_t small = peak(sequential_at), large = peak(gpipe_at);
  REQUIRE(large > small);
  ValidationOptions options;
  options.schedules = {"gpipe"};
  options.processors = {1};
  options.runs = 3;
  // The one-processor tables' slowdowns: the process's warm-up table's, then the three rounds':
  // the last round's an outlier, as a change of the machine's speed between a profile's two runs
  // makes one.
  const std::vector<double> slowdowns = {0.1, 0.1, 0.1, 0.6};
  std::size_t calls = 0;
  options.calibrate = [&](int) {
    Calibration c = scaled_calibration(network, config, 1.0);
    c.timed_footprint_bytes = small;
    c.footprint_slowdown = slowdowns.at(calls++);
    c.footprint_small_bytes = small;
    c.footprint_large_bytes = large;
    return c;
  };
  const ValidationReport report =
      validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted());
  REQUIRE(report.rows.size() == 1);
  CHECK(report.footprint_slowdown == doctest::Approx(0.1));  // the median of 0.1, 0.1 and 0.6
  CHECK(report.rows[0].footprint_factor == doctest::Approx(1.1));  // gpipe holds the large footprint: 1 + 0.1
  // Every round predicted gpipe's step from a table scaled by 1.1, the last one too.
  gpipe_at.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.1));
  const double expected_s = evaluate(make_graph(gpipe_at)).iteration_s;
  for (const double predicted_s : report.rows[0].predicted_rounds_s) CHECK(predicted_s == doctest::Approx(expected_s));
}

TEST_CASE("validation moves a P-processor row's table toward its stash far point by how long the row holds its stashes") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 4, 2);
  const Network network = make_request(config).network;
  // The P = 2 table: each layer timed at the distance its processor has in a 2-processor 1f1b
  // graph, the far point four times the farther one, forwards 20% and backwards 10% slower there.
  // A reuse curve whose half is reached at 64 bytes: the floor is under every distance here.
  Calibration pipeline = scaled_calibration(network, config, 1.0);
  pipeline.reuse_extra_s_per_byte = {{64, 1e-12}, {128, 2e-12}};
  GraphConfig timed_at = config_for(kMlp, "1f1b", 2, 4, 2);
  timed_at.calibration = std::make_shared<const Calibration>(pipeline);
  const TaskGraph timed_graph = make_graph(timed_at);
  const std::vector<StashReuse> timed = stash_reuse(timed_graph, network);
  REQUIRE(timed.size() == 2);
  std::vector<double> timed_of_layer(network.size(), -1);
  for (const Task& t : timed_graph.tasks) {
    if (t.kind != TaskKind::F || t.minibatch != 0 || t.microbatch != 0) continue;
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) timed_of_layer[static_cast<std::size_t>(l)] = timed[static_cast<std::size_t>(t.resource)].distance_bytes;
  }
  const double far = 4 * std::max(timed[0].distance_bytes, timed[1].distance_bytes);
  pipeline.far_stash_distance_bytes = static_cast<std::int64_t>(far);
  for (std::size_t l = 0; l < network.size(); ++l) {
    LayerTimes& times = pipeline.layers.at(network.layers[l].name);
    times.timed_stash_distance_bytes = timed_of_layer[l];
    times.far_forward_factor = 1.2;
    times.far_backward_factor = 1.1;
  }
  ValidationOptions options;
  options.schedules = {"sequential", "gpipe", "1f1b", "pipedream"};
  options.processors = {1, 2};
  options.runs = 1;
  options.calibrate = [&](int processors) { return processors == 1 ? scaled_calibration(network, config, 1.0) : pipeline; };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, runs_as_predicted());
  REQUIRE(report.rows.size() == 8);
  bool gpipe_moved = false;
  for (const auto& row : report.rows) {
    CAPTURE(row.schedule);
    CAPTURE(row.processors);
    if (row.processors == 1) {  // a one-processor table has no far point
      CHECK(row.stash_far_share == 0);
      continue;
    }
    // Per processor, ln(d / t) / ln(far / t) in [0, 1], t its layers' timed distance (one per
    // processor where the cuts are 1f1b's), both at least the floor; the largest.
    GraphConfig at = config_for(kMlp, row.schedule, 2, 4, 2);
    at.calibration = std::make_shared<const Calibration>(pipeline);
    const TaskGraph graph = make_graph(at);
    const std::vector<StashReuse> reuse = stash_reuse(graph, network);
    double share = 0;
    for (const Task& t : graph.tasks) {
      if (t.kind != TaskKind::F || t.minibatch != 0 || t.microbatch != 0) continue;
      const double d = reuse[static_cast<std::size_t>(t.resource)].distance_bytes, t_bytes = timed_of_layer[static_cast<std::size_t>(t.first_layer)];
      if (d < 0 || t_bytes < 0) continue;
      const double floored_d = std::max(d, 64.0), floored_t = std::max(t_bytes, 64.0);  // the curve's floor
      share = std::max(share, std::clamp(std::log(floored_d / floored_t) / std::log(far / floored_t), 0.0, 1.0));
    }
    CHECK(row.stash_far_share == doctest::Approx(share));
    if (row.schedule == "1f1b") CHECK(row.stash_far_share == 0);  // the timed run's own order
    if (row.schedule == "gpipe") gpipe_moved = row.stash_far_share > 0;
    // Priced on the table moved that far: forwards 1 + 0.2 x, backwards 1 + 0.1 x.
    Calibration moved = pipeline;
    for (auto& [name, times] : moved.layers) {
      times.forward_s *= 1 + 0.2 * share;
      times.activation_grad_s *= 1 + 0.1 * share;
      times.weight_grad_s *= 1 + 0.1 * share;
      times.backward_s *= 1 + 0.1 * share;
    }
    at.calibration = std::make_shared<const Calibration>(moved);
    CHECK(row.predicted_step_s == doctest::Approx(evaluate(make_graph(at)).iteration_s));
    CHECK(row.footprint_factor == 1);  // the stash term in its place
  }
  CHECK(gpipe_moved);
}

TEST_CASE("a pipeline table's stash far point: one-processor gpipe on every processor's thread at once") {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  const Network network = make_request(config).network;
  std::mutex mutex;
  std::vector<std::pair<TaskGraph, TrainingRun>> recorded;
  std::vector<int> copy_of;  // per run: TrainingOptions::copy, of TrainingOptions::copies
  std::vector<int> copies_of;
  const Runner recording = [&](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    TrainingRun run = cpu::run_cpu(g, n, s, o);
    std::lock_guard<std::mutex> lock(mutex);
    recorded.emplace_back(g, run);
    copy_of.push_back(o.copy);
    copies_of.push_back(o.copies);
    return run;
  };
  TrainingOptions options;
  options.handoff_spin_s = 0;
  // A reuse curve that reaches half its far end at 64 bytes: the floor under lenet5's distances
  // at these few samples (tens of KiB).
  const std::vector<std::pair<std::int64_t, double>> curve = {{64, 1e-12}, {128, 2e-12}};
  const std::optional<Calibration> timed = profile_layers_in_pipeline(config, data, 4, 7, recording, {}, 2, options, 0, curve, {},
                                                                      /*time_far_point=*/true);
  REQUIRE(timed.has_value());
  // The 1f1b run, layerpipe's and zb-h1's, then the two one-processor gpipe copies, as many
  // minibatches as the pipeline's.
  REQUIRE(recorded.size() == 5);
  const TaskGraph& pipeline = recorded[0].first;
  for (std::size_t r = 3; r < 5; ++r) {
    CHECK(recorded[r].first.schedule == "gpipe");
    CHECK(recorded[r].first.processor_count() == 1);
    CHECK(recorded[r].first.minibatches == pipeline.minibatches);
    CHECK(copies_of[r] == 2);
  }
  CHECK(copy_of[3] + copy_of[4] == 1);  // copies 0 and 1
  // The far point's distance is gpipe's on one processor, each layer's the distance of its
  // processor in the pipeline.
  const double far = stash_reuse(recorded[3].first, network)[0].distance_bytes;
  REQUIRE(far > 0);
  CHECK(timed->far_stash_distance_bytes == std::llround(far));
  const std::vector<StashReuse> reuse = stash_reuse(pipeline, network);
  // Per processor, its layers' forwards and backwards summed at the far point over the table's,
  // at least 1, the same for each of its layers.
  const std::vector<TrainingRun> far_runs = {recorded[3].second, recorded[4].second};
  const Calibration far_table = calibration_from_runs(recorded[3].first, network, far_runs, pipeline.minibatches / 2);
  std::set<std::int32_t> processors_seen;
  for (const Task& t : pipeline.tasks) {
    if (t.kind != TaskKind::F || t.minibatch != 0 || t.microbatch != 0) continue;
    processors_seen.insert(t.resource);
    double table_f = 0, far_f = 0, table_b = 0, far_b = 0;
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
      const std::string& name = network.layers[static_cast<std::size_t>(l)].name;
      table_f += timed->layers.at(name).forward_s;
      far_f += far_table.layers.at(name).forward_s;
      table_b += timed->layers.at(name).fused_backward_s();
      far_b += far_table.layers.at(name).fused_backward_s();
    }
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
      CAPTURE(l);
      const LayerTimes& times = timed->layers.at(network.layers[static_cast<std::size_t>(l)].name);
      CHECK(times.timed_stash_distance_bytes == reuse[static_cast<std::size_t>(t.resource)].distance_bytes);
      CHECK(times.far_forward_factor == doctest::Approx(std::max(1.0, far_f / table_f)));
      CHECK(times.far_backward_factor == doctest::Approx(std::max(1.0, far_b / table_b)));
    }
  }
  CHECK(processors_seen.size() == 2);
  // Without it (the default, and GPUs), no gpipe runs and no far point.
  recorded.clear();
  const std::optional<Calibration> without = profile_layers_in_pipeline(config, data, 4, 7, recording, {}, 2, options, 0);
  REQUIRE(without.has_value());
  CHECK(recorded.size() == 3);
  CHECK(without->far_stash_distance_bytes == 0);
  CHECK(without->layers.begin()->second.far_forward_factor == -1);
  // A far point within the floor (1 MiB without a curve) is as warm as the table: no runs either,
  // and the profile says why.
  REQUIRE(far < (1 << 20));
  recorded.clear();
  std::vector<std::string> said;
  const std::optional<Calibration> near = profile_layers_in_pipeline(
      config, data, 4, 7, recording, [&](const std::string& m) { said.push_back(m); }, 2, options, 0, {}, {}, true);
  REQUIRE(near.has_value());
  CHECK(recorded.size() == 3);
  CHECK(near->far_stash_distance_bytes == 0);
  CHECK(std::any_of(said.begin(), said.end(), [](const std::string& m) { return m.rfind("no stash far point", 0) == 0; }));
  // A far run the machine refuses (an Error, as a processor's memory would be): no far point
  // either, the reason said, and the profile goes on.
  const Runner refusing = [&](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    if (g.schedule == "gpipe") throw Error("out of memory (refused by the test)");
    return recording(g, n, s, o);
  };
  recorded.clear();
  said.clear();
  const std::optional<Calibration> refused = profile_layers_in_pipeline(
      config, data, 4, 7, refusing, [&](const std::string& m) { said.push_back(m); }, 2, options, 0, curve, {}, true);
  REQUIRE(refused.has_value());
  CHECK(recorded.size() == 3);
  CHECK(refused->far_stash_distance_bytes == 0);
  CHECK(std::any_of(said.begin(), said.end(), [](const std::string& m) { return m == "no stash far point: out of memory (refused by the test)"; }));
}

TEST_CASE("a pipeline table's co-run slope: what each layer's time grows by with its task's overlap") {
  // A 2-processor 1f1b graph of mlp with layers of unequal times, evaluated: its tasks overlap the
  // other processor's by varied shares.
  const Dataset data = data_for(kMlp);
  GraphConfig config = config_for(kMlp, "1f1b", 2, 4, 4);
  const Network network = make_request(config).network;
  config.calibration = std::make_shared<const Calibration>(scaled_calibration(network, config, 1.0));
  const TaskGraph graph = make_graph(config);
  TrainingRun run;
  run.result = evaluate(graph);
  const std::vector<double> shares = other_busy_shares(graph, run.result);
  // Each share found apart: the task's overlap with every task of the other processor.
  std::set<double> distinct;
  for (const auto& t : graph.tasks) {
    double expected = 0;
    const TaskTiming& a = run.result.tasks[static_cast<std::size_t>(t.id)];
    if (t.placement == Placement::processor && a.end_cycles > a.start_cycles) {
      for (const auto& u : graph.tasks) {
        if (u.placement != Placement::processor || u.resource == t.resource) continue;
        const TaskTiming& b = run.result.tasks[static_cast<std::size_t>(u.id)];
        expected += static_cast<double>(std::max<std::int64_t>(0, std::min(a.end_cycles, b.end_cycles) - std::max(a.start_cycles, b.start_cycles)));
      }
      expected /= static_cast<double>(a.end_cycles - a.start_cycles);
      distinct.insert(expected);
    }
    CAPTURE(t.id);
    CHECK(shares[static_cast<std::size_t>(t.id)] == doctest::Approx(expected));
  }
  REQUIRE(distinct.size() > 2);
  // Layer times that grow by 30% of their time alone per unit of share; the first minibatch, left
  // out, 100 times slower.
  const double slope = 0.3;
  double weighted = 0, total = 0;
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor || t.kind == TaskKind::U) continue;
    for (std::int32_t layer = t.first_layer; layer <= t.last_layer; ++layer) {
      const double alone_s = 1e-3 * (layer + 1) * (t.kind == TaskKind::F ? 1 : 2);
      const double share = shares[static_cast<std::size_t>(t.id)];
      const double seconds = alone_s * (1 + slope * share) * (t.minibatch < 1 ? 100 : 1);
      run.layer_times.push_back({t.id, layer, t.kind, seconds, 0});
      if (t.minibatch >= 1) {
        weighted += seconds * share;
        total += seconds;
      }
    }
  }
  const CoRunFit fit = fit_co_run(graph, run, 1);
  CHECK(fit.slope == doctest::Approx(slope));
  CHECK(fit.share == doctest::Approx(weighted / total));
  // One key's times bent so that its line nears 0 at share 0 (noise, on a GPU; its intercept 1% of
  // its mean): each key's slope over its intercept, averaged (the way until 2026-11-28, computed
  // here), goes far off (22.9); the relative slopes averaged before the division move little (0.63).
  {
    using Key = std::tuple<std::int32_t, std::int32_t, TaskKind>;
    std::map<Key, std::vector<std::size_t>> records;  // per key, its records in run.layer_times
    for (std::size_t i = 0; i < run.layer_times.size(); ++i) {
      const Task& t = graph.tasks[static_cast<std::size_t>(run.layer_times[i].task)];
      if (t.minibatch >= 1) records[{t.resource, run.layer_times[i].layer, t.kind}].push_back(i);
    }
    // Per key: n var(share), the slope and the intercept of its least-squares line, and its mean share.
    const auto line = [&](const TrainingRun& r, const std::vector<std::size_t>& of) {
      double mean_x = 0, mean_y = 0;
      for (const auto i : of) {
        mean_x += shares[static_cast<std::size_t>(r.layer_times[i].task)] / static_cast<double>(of.size());
        mean_y += r.layer_times[i].seconds / static_cast<double>(of.size());
      }
      double sxx = 0, sxy = 0;
      for (const auto i : of) {
        const double dx = shares[static_cast<std::size_t>(r.layer_times[i].task)] - mean_x;
        sxx += dx * dx;
        sxy += dx * (r.layer_times[i].seconds - mean_y);
      }
      return std::array<double, 4>{sxx, sxy / sxx, mean_y - sxy / sxx * mean_x, mean_x};
    };
    REQUIRE(records.size() >= 8);
    // The key whose shares vary least of those whose shares vary as much as a tenth of the most
    // varied's (mlp's 2-processor 1f1b: 6 of 8 keys within 12% of each other).
    double most = 0;
    for (const auto& [key, of] : records) most = std::max(most, line(run, of)[0]);
    auto bent = records.end();
    for (auto it = records.begin(); it != records.end(); ++it) {
      const double weight = line(run, it->second)[0];
      if (weight > most / 10 && (bent == records.end() || weight < line(run, bent->second)[0])) bent = it;
    }
    REQUIRE(bent != records.end());
    TrainingRun noisy = run;
    const auto [sxx, b, a, mean_x] = line(run, bent->second);
    const double mean_y = a + b * mean_x;
    const double steeper = (mean_y - 0.01 * mean_y) / mean_x;  // its intercept becomes 1% of its mean
    for (const auto i : bent->second) {
      noisy.layer_times[i].seconds += (steeper - b) * (shares[static_cast<std::size_t>(noisy.layer_times[i].task)] - mean_x);
    }
    CHECK(line(noisy, bent->second)[2] == doctest::Approx(0.01 * mean_y));
    // Per key, over the keys: the slope over the intercept and the slope over the mean, averaged
    // with weights n var(share).
    double ratio_sum = 0, ratio_weights = 0, relative_sum = 0;
    for (const auto& [key, of] : records) {
      const auto l = line(noisy, of);
      ratio_sum += l[0] * l[1] / l[2];
      relative_sum += l[0] * l[1] / (l[2] + l[1] * l[3]);
      ratio_weights += l[0];
    }
    const CoRunFit robust = fit_co_run(graph, noisy, 1);
    CAPTURE(ratio_sum / ratio_weights);
    CAPTURE(robust.slope);
    CHECK(ratio_sum / ratio_weights > 10 * slope);
    CHECK(robust.slope > slope);
    CHECK(robust.slope < 3 * slope);
    // The fit's defining property: its slope's relative slopes average the measured ones.
    double at_fit = 0;
    for (const auto& [key, of] : records) {
      const auto l = line(noisy, of);
      at_fit += l[0] * robust.slope / (1 + robust.slope * l[3]);
    }
    CHECK(at_fit / ratio_weights == doctest::Approx(relative_sum / ratio_weights));
  }
  // One processor: nothing beside it, no slope.
  GraphConfig one = config;
  one.processors = 1;
  const TaskGraph alone = make_graph(one);
  TrainingRun alone_run;
  alone_run.result = evaluate(alone);
  for (const double share : other_busy_shares(alone, alone_run.result)) CHECK(share == 0);
  for (const auto& t : alone.tasks) {
    if (t.placement == Placement::processor && t.kind == TaskKind::F) alone_run.layer_times.push_back({t.id, t.first_layer, t.kind, 1e-3, 0});
  }
  CHECK(std::isnan(fit_co_run(alone, alone_run, 0).slope));
}

TEST_CASE("a table for P processors timed in a pipeline: each layer where a P-processor 1f1b run puts it") {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  std::vector<TaskGraph> graphs;  // what the runner was given, in order
  std::vector<TrainingRun> runs;
  const Runner recording = [&](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    CHECK(o.record_layer_times);
    CHECK(o.handoff_spin_s == 0);  // the options given, passed on
    graphs.push_back(g);
    runs.push_back(cpu::run_cpu(g, n, s, o));
    return runs.back();
  };
  TrainingOptions options;
  options.handoff_spin_s = 0;
  // No span to warm up for: one pipeline run (the span's rule has a test of its own, below).
  const std::optional<Calibration> timed = profile_layers_in_pipeline(config, data, 4, 7, recording, {}, 2, options, 0);
  REQUIRE(timed.has_value());
  const Calibration& c = *timed;
  // The pipeline's run, then a layerpipe run on as many processors for the one-layer tasks, then
  // a zb-h1 run for split tasks over a stage.
  REQUIRE(graphs.size() == 3);
  CHECK(graphs[0].processor_count() == 2);
  CHECK(graphs[1].processor_count() == 2);
  CHECK(graphs[1].schedule == "layerpipe");
  CHECK(graphs[2].processor_count() == 2);
  CHECK(graphs[2].schedule == "zb-h1");
  CHECK(c.concurrent == 2);
  CHECK(c.pipeline_schedule == kCalibrationPipelineSchedule);
  // Each layer's F: the median of the pipeline run's samples in its second half (the first is
  // warm-up, as a run's step time is its second half's), taken on whichever processor ran it;
  // both processors ran some.
  const Network network = make_request(config).network;
  REQUIRE(graphs[0].minibatches == 4);  // 4 microbatches asked for, 2 a minibatch: 2 timed after 2
  const std::int32_t warm_up = graphs[0].minibatches / 2;
  std::set<std::int32_t> processors_seen;
  for (std::size_t l = 0; l < network.size(); ++l) {
    std::vector<double> samples;
    for (const auto& time : runs[0].layer_times) {
      const Task& t = graphs[0].tasks[static_cast<std::size_t>(time.task)];
      if (time.layer == static_cast<std::int32_t>(l) && time.kind == TaskKind::F && t.minibatch >= warm_up) {
        samples.push_back(time.seconds);
        processors_seen.insert(t.resource);
      }
    }
    CAPTURE(l);
    CHECK(samples.size() == 2 * 2);  // 2 minibatches after the warm-up x 2 microbatches
    CHECK(c.layers.at(network.layers[l].name).forward_s == median_of(samples));
  }
  CHECK(processors_seen.size() == 2);
  // The input's load: one record for every forward from the first layer and none elsewhere; the
  // table's input_load_s is their median after the warm-up.
  std::vector<double> loads;
  std::size_t load_records = 0, first_forwards = 0;
  for (const auto& t : graphs[0].tasks) first_forwards += t.kind == TaskKind::F && t.first_layer == 0 ? 1 : 0;
  for (const auto& time : runs[0].layer_times) {
    if (time.layer != kInputLoadLayer) continue;
    const Task& t = graphs[0].tasks[static_cast<std::size_t>(time.task)];
    ++load_records;
    CHECK(t.kind == TaskKind::F);
    CHECK(t.first_layer == 0);
    CHECK(time.kind == TaskKind::F);
    if (t.minibatch >= warm_up) loads.push_back(time.seconds);
  }
  CHECK(load_records == first_forwards);
  CHECK(loads.size() == 2 * 2);
  CHECK(c.input_load_s > 0);
  CHECK(c.input_load_s == median_of(loads));
  // More processors than the network has layers: no such pipeline, and no run.
  CHECK_FALSE(profile_layers_in_pipeline(config, data, 4, 7, recording, {}, 64, options, 0).has_value());
  CHECK(graphs.size() == 3);
  CHECK_THROWS_AS(profile_layers_in_pipeline(config, data, 4, 7, recording, {}, 1, options, 0), Error);
}

namespace {

// A table's statistic, computed here again: the upper median of the means of the samples in 8
// blocks, in the order taken (of as many blocks as there are samples, where fewer).
double median_of_block_means(const std::vector<double>& samples) {
  std::vector<double> means;
  const std::size_t blocks = std::min<std::size_t>(8, samples.size());
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = samples.size() * b / blocks, to = samples.size() * (b + 1) / blocks;
    double sum = 0;
    for (std::size_t i = from; i < to; ++i) sum += samples[i];
    means.push_back(sum / static_cast<double>(to - from));
  }
  std::sort(means.begin(), means.end());
  return means[means.size() / 2];
}

// lenet5's table for 2 processors (2 microbatches of 2 samples, 4 repeats; the senders' threads
// copy the transfers), and the runs its profile made, as its runner saw them: the 1f1b run it
// is timed in, the one-layer layerpipe run and the zb-h1 run.
struct PipelineProfile {
  Calibration table;
  RecordedRuns runs;
};
PipelineProfile lenet5_pipeline_profile() {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  PipelineProfile profile;
  TrainingOptions options;
  options.handoff_spin_s = 0;
  options.transfer_threads = TransferThreads::senders;
  const std::optional<Calibration> timed =
      profile_layers_in_pipeline(config, data, 4, 7, recording_into(profile.runs), {}, 2, options, 0);
  REQUIRE(timed.has_value());
  REQUIRE(profile.runs.size() == 3);
  REQUIRE(profile.runs[0].first.schedule == "1f1b");
  REQUIRE(profile.runs[1].first.schedule == "layerpipe");
  REQUIRE(profile.runs[2].first.schedule == "zb-h1");
  profile.table = *timed;
  return profile;
}

}  // namespace

TEST_CASE("a profile times what split tasks over a stage cost beyond their layers in a zb-h1 run") {
  // lenet5 on 2 processors, 2 microbatches a minibatch: the zb-h1 run times 2 minibatches after 2,
  // so 8 BAs and 8 BWs (2 stages x 2 x 2), each its own block: the table's figure is their upper
  // median of what each took beyond its layers' own-kind times and the table's cost per layer
  // (all of it for a BA with no layer time, over the first layer alone), at least 0.
  const PipelineProfile profile = lenet5_pipeline_profile();
  const Calibration& timed = profile.table;
  const auto& [graph, run] = profile.runs[2];
  REQUIRE(graph.schedule == "zb-h1");
  std::map<TaskKind, std::vector<double>> beyond;
  for (const Task& t : graph.tasks) {
    if ((t.kind != TaskKind::BA && t.kind != TaskKind::BW) || t.minibatch < 2) continue;
    double layers_s = 0;
    for (const auto& time : run.layer_times) {
      if (time.task == t.id && time.kind == t.kind) layers_s += time.seconds;
    }
    const TaskTiming& timing = run.result.tasks[static_cast<std::size_t>(t.id)];
    beyond[t.kind].push_back(static_cast<double>(timing.end_cycles - timing.start_cycles) / graph.clock_hz - layers_s -
                             timed.layer_overhead_s * (t.last_layer - t.first_layer + 1));
  }
  REQUIRE(timed.stage_kind_overhead_s.size() == 2);
  for (const TaskKind kind : {TaskKind::BA, TaskKind::BW}) {
    CAPTURE(to_string(kind));
    REQUIRE(beyond[kind].size() == 8);
    std::sort(beyond[kind].begin(), beyond[kind].end());
    CHECK(timed.stage_kind_overhead_s.at(kind) == doctest::Approx(std::max(0.0, beyond[kind][4])).epsilon(1e-12));
  }
}

TEST_CASE("a table for P processors takes the copies of sizes its pipeline did not make from LayerPipe's run") {
  // lenet5 on 2 processors, 2 microbatches a minibatch, 4 repeats: the 1f1b run times 2
  // minibatches after 2, the one-layer layerpipe run 5 after 5. Each size's figure is the upper
  // median of block means of the copies its senders' threads made, from the 1f1b run where that
  // made copies of the size, else from the layerpipe run (its stashes sent to their BW).
  const PipelineProfile profile = lenet5_pipeline_profile();
  const Calibration& timed = profile.table;
  const RecordedRuns& recorded = profile.runs;
  // Per run, per size, its senders' copies in the order each thread started them.
  const auto copies_of = [](const TaskGraph& graph, const TrainingRun& run) {
    REQUIRE(run.copies_on_senders);
    const std::vector<std::int32_t> after = copied_after(graph);
    std::map<std::int32_t, std::vector<std::pair<std::int64_t, const Task*>>> by_thread;  // start, task
    for (const Task& t : graph.tasks) {
      if (t.placement != Placement::link || t.minibatch < graph.minibatches / 2) continue;
      REQUIRE(after[static_cast<std::size_t>(t.id)] >= 0);
      const std::int32_t thread = graph.tasks[static_cast<std::size_t>(after[static_cast<std::size_t>(t.id)])].resource;
      by_thread[thread].emplace_back(run.result.tasks[static_cast<std::size_t>(t.id)].start_cycles, &t);
    }
    std::map<std::int64_t, std::vector<double>> seconds;
    for (auto& [thread, copies] : by_thread) {
      std::sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [start, t] : copies) {
        const TaskTiming& timing = run.result.tasks[static_cast<std::size_t>(t->id)];
        seconds[t->bytes].push_back(static_cast<double>(timing.end_cycles - timing.start_cycles) / graph.clock_hz);
      }
    }
    return seconds;
  };
  const auto pipeline = copies_of(recorded[0].first, recorded[0].second);
  const auto one_layer = copies_of(recorded[1].first, recorded[1].second);
  std::map<std::int64_t, double> expected;
  for (const auto& [bytes, seconds] : one_layer) expected[bytes] = median_of_block_means(seconds);
  for (const auto& [bytes, seconds] : pipeline) expected[bytes] = median_of_block_means(seconds);
  REQUIRE(expected.size() > pipeline.size());  // LayerPipe made sizes the pipeline did not
  REQUIRE(timed.pipeline_copy_seconds.size() == expected.size());
  for (const auto& each_bytes_seconds : timed.pipeline_copy_seconds) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& bytes = each_bytes_seconds.first;
    const auto& seconds = each_bytes_seconds.second;
    CAPTURE(bytes);
    REQUIRE(expected.count(bytes) == 1);
    CHECK(seconds == doctest::Approx(expected.at(bytes)).epsilon(1e-12));
    CHECK(timed.sender_copy_s(bytes) == seconds);
  }
}

namespace {

// lenet5's one-processor profile (2 microbatches of 2 samples, 4 repeats), and the second run it
// makes, LayerPipe's one-layer run, as the profile's runner saw it.
struct OneLayerProfile {
  Calibration table;
  TaskGraph one_layer;
  TrainingRun run;
  Network network;
};
OneLayerProfile profile_with_one_layer_run() {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  RecordedRuns recorded;
  const Runner recording = recording_into(recorded);
  Calibration table = profile_layers(config, data, 4, 7, recording, {}, 1);
  REQUIRE(recorded.size() == 3);  // sequential, layerpipe, zb-h1
  REQUIRE(recorded[1].first.schedule == "layerpipe");
  return {std::move(table), std::move(recorded[1].first), std::move(recorded[1].second), make_request(config).network};
}

// A CPU runner that keeps every graph it runs and its run in `graphs` and `runs`, and says the
// first run's steps took `first_step_s` each (a profile's span rule reads that).
Runner first_step_runner(double first_step_s, std::vector<TaskGraph>& graphs, std::vector<TrainingRun>& runs) {
  return [first_step_s, &graphs, &runs](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    graphs.push_back(g);
    runs.push_back(cpu::run_cpu(g, n, s, o));
    if (runs.size() == 1) runs.back().result.iteration_s = first_step_s;
    return runs.back();
  };
}

}  // namespace

TEST_CASE("a table for P processors is timed once the pipeline's threads have run together for its span") {
  // lenet5, 2 microbatches a minibatch, 4 repeats: 2 minibatches timed after 2. The runner says
  // the first run's steps took `first_step_s` each; where 2 of them span less than the span, the
  // run is made again with warm-up and timed part each ceil(span / step) minibatches long, and the
  // table is the second run's, timed after its warm-up.
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  const Network network = make_request(config).network;
  TrainingOptions options;
  options.handoff_spin_s = 0;
  for (const double first_step_s : {1e-3, 0.5}) {
    CAPTURE(first_step_s);
    std::vector<TaskGraph> graphs;
    std::vector<TrainingRun> runs;
    const Runner stepping = first_step_runner(first_step_s, graphs, runs);
    const std::optional<Calibration> timed = profile_layers_in_pipeline(config, data, 4, 7, stepping, {}, 2, options, 10e-3);
    REQUIRE(timed.has_value());
    REQUIRE(graphs.size() >= 2);
    CHECK(graphs[0].minibatches == 4);
    const bool again = first_step_s * 2 < 10e-3;  // 2 warm-up minibatches of 1 ms: 2 ms, less than 10
    // The pipeline's runs, then the layerpipe run for the one-layer tasks and the zb-h1 run.
    REQUIRE(graphs.size() == (again ? 4u : 3u));
    const std::size_t timed_run = again ? 1 : 0;
    const std::int32_t warm_up = again ? 10 : 2;  // ceil(10 ms / 1 ms)
    CHECK(graphs[timed_run].minibatches == 2 * warm_up);
    CHECK(graphs[timed_run].processor_count() == 2);
    CHECK(graphs[graphs.size() - 2].schedule == "layerpipe");
    CHECK(graphs.back().schedule == "zb-h1");
    for (std::size_t l = 0; l < network.size(); ++l) {
      std::vector<double> samples;
      for (const auto& time : runs[timed_run].layer_times) {
        const Task& t = graphs[timed_run].tasks[static_cast<std::size_t>(time.task)];
        if (time.layer == static_cast<std::int32_t>(l) && time.kind == TaskKind::F && t.minibatch >= warm_up) samples.push_back(time.seconds);
      }
      CAPTURE(l);
      CHECK(samples.size() == static_cast<std::size_t>(warm_up) * 2);  // the timed minibatches x 2 microbatches
      CHECK(timed->layers.at(network.layers[l].name).forward_s == doctest::Approx(median_of_block_means(samples)).epsilon(1e-12));
      // Its one-layer run (five minibatches timed after five) prices a forward alone in its task:
      // each of its one-layer forwards taken from its task's overlap x to the table's share o, by
      // the table's co-run slope s, (1 + s o) / (1 + s x), where the table has them; the median of
      // block means of those (no reuse curve: nothing taken off for the weights' reuse). Its BA
      // parts' way back also holds the other processor's work: no figure for it.
      const TaskGraph& layer_graph = graphs[graphs.size() - 2];
      const TrainingRun& layer_run = runs[runs.size() - 2];
      REQUIRE(layer_graph.minibatches == 10);
      const bool co_run = timed->co_run_slope >= 0 && timed->co_run_share >= 0;
      const std::vector<double> shares = other_busy_shares(layer_graph, layer_run.result);
      std::vector<double> alone_s;
      for (const auto& time : layer_run.layer_times) {
        const Task& t = layer_graph.tasks[static_cast<std::size_t>(time.task)];
        if (time.layer != static_cast<std::int32_t>(l) || time.kind != TaskKind::F || t.kind != TaskKind::F ||
            t.minibatch < 5) {
          continue;
        }
        REQUIRE(t.first_layer == t.last_layer);
        const double x = shares[static_cast<std::size_t>(time.task)];
        alone_s.push_back(co_run ? time.seconds * (1 + timed->co_run_slope * timed->co_run_share) / (1 + timed->co_run_slope * x)
                                 : time.seconds);
      }
      REQUIRE(alone_s.size() == 5 * 2);  // the timed minibatches x 2 microbatches
      CHECK(timed->layers.at(network.layers[l].name).forward_one_layer_s ==
            doctest::Approx(median_of_block_means(alone_s)).epsilon(1e-12));
      CHECK(timed->layers.at(network.layers[l].name).activation_grad_to_linear_one_layer_s == -1);
    }
  }
  const Runner never = [](const TaskGraph&, const Network&, const BatchSampler&, const TrainingOptions&) -> TrainingRun {
    FAIL("no run for a span that is not a duration");
    return {};
  };
  CHECK_THROWS_AS(profile_layers_in_pipeline(config, data, 4, 7, never, {}, 2, options, -1), Error);
}

TEST_CASE("a one-processor table is timed over at least its span, and its footprint run as long") {
  // lenet5, 2 microbatches a minibatch, 4 repeats: 2 minibatches timed after 2. The runner says
  // the first run's steps took `first_step_s` each; where 2 of them span less than the span, the
  // sequential run is made again with warm-up and timed part each ceil(span / step) minibatches
  // long, the table is that run's, timed after its warm-up, and the gpipe run for the footprint
  // figure is as long.
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  const Network network = make_request(config).network;
  for (const double span_s : {0.0, 10e-3}) {
    for (const double first_step_s : {1e-3, 0.5}) {
      CAPTURE(span_s);
      CAPTURE(first_step_s);
      std::vector<TaskGraph> graphs;
      std::vector<TrainingRun> runs;
      const Runner stepping = first_step_runner(first_step_s, graphs, runs);
      const Calibration table = profile_layers(config, data, 4, 7, stepping, {}, 1, {}, /*time_footprint=*/true, {}, {}, span_s);
      const bool again = first_step_s * 2 < span_s;  // 2 timed minibatches of 1 ms: 2 ms, less than 10
      const std::int32_t warm_up = again ? 10 : 2;     // ceil(10 ms / 1 ms)
      // The sequential run (twice where again), gpipe's, then the layerpipe and zb-h1 runs.
      REQUIRE(graphs.size() == (again ? 5u : 4u));
      const std::size_t timed_run = again ? 1 : 0;
      CHECK(graphs[0].minibatches == 4);
      CHECK(graphs[timed_run].schedule == "sequential");
      CHECK(graphs[timed_run].minibatches == 2 * warm_up);
      CHECK(graphs[timed_run + 1].schedule == "gpipe");
      CHECK(graphs[timed_run + 1].minibatches == 2 * warm_up);
      CHECK(graphs[timed_run + 2].schedule == "layerpipe");
      CHECK(graphs[timed_run + 3].schedule == "zb-h1");
      for (std::size_t l = 0; l < network.size(); ++l) {
        std::vector<double> samples;
        for (const auto& time : runs[timed_run].layer_times) {
          const Task& t = graphs[timed_run].tasks[static_cast<std::size_t>(time.task)];
          if (time.layer == static_cast<std::int32_t>(l) && time.kind == TaskKind::F && t.minibatch >= warm_up) {
            samples.push_back(time.seconds);
          }
        }
        CAPTURE(l);
        CHECK(samples.size() == static_cast<std::size_t>(warm_up) * 2);  // the timed minibatches x 2 microbatches
        CHECK(table.layers.at(network.layers[l].name).forward_s == doctest::Approx(median_of_block_means(samples)).epsilon(1e-12));
      }
    }
  }
  const Runner never = [](const TaskGraph&, const Network&, const BatchSampler&, const TrainingOptions&) -> TrainingRun {
    FAIL("no run for a span that is not a duration");
    return {};
  };
  CHECK_THROWS_AS(profile_layers(config, data, 4, 7, never, {}, 1, {}, false, {}, {}, -1), Error);
}

TEST_CASE("validation pairs each round's prediction with that round's runs") {
  const Dataset data = data_for(kMlp);
  const GraphConfig config = config_for(kMlp, "gpipe", 1, 2, 2);
  const Network network = make_request(config).network;
  ValidationOptions options = gpipe_at_one_and_two(5);
  options.table_tolerance = 0;  // round 4's table, twice its peers', taken as it comes
  // A machine whose speed is 1 during the calibrations of rounds 1-3 and 2 in rounds 4-5, but 2
  // already during the runs of rounds 2 and 3; its tasks take 10% longer than calibrated at the
  // same speed. Rounds 1, 4 and 5 saw one speed throughout: the model's own error is 1 / 1.1 - 1.
  const std::vector<double> calibrating_speed = {1, 1, 1, 2, 2}, running_speed = {1, 2, 2, 2, 2};
  int round = -2;  // the first calibration warms the process up, and is not kept
  options.calibrate = [&](int processors) {
    if (processors == 1) ++round;
    return scaled_calibration(network, config, calibrating_speed.at(static_cast<std::size_t>(std::max(round, 0))));
  };
  const auto r = [&] { return static_cast<std::size_t>(round); };
  const Runner machine = [&](const TaskGraph& g, const Network&, const BatchSampler&, const TrainingOptions&) {
    TrainingRun run;  // the graph was built from this round's calibration
    run.result.iteration_s = evaluate(g).iteration_s * 1.1 * running_speed.at(r()) / calibrating_speed.at(r());
    return run;
  };
  const ValidationReport report = validate(config, data, options, [](const TaskGraph& g) { return evaluate(g); }, machine);
  REQUIRE(report.rows.size() == 2);
  for (const auto& row : report.rows) {
    CAPTURE(row.processors);
    REQUIRE(row.predicted_rounds_s.size() == 5);
    REQUIRE(row.measured_rounds_s.size() == 5);
    // Paired, three rounds of five say 1 / 1.1.
    CHECK(row.step_error == doctest::Approx(1 / 1.1 - 1));
    // Unpaired, the medians would compare a speed-1 prediction with a speed-2 run.
    CHECK(row.predicted_step_s / row.measured_step_s - 1 == doctest::Approx(1 / 2.2 - 1));
    // Each round's runs share its speed: the measured speedup is the predicted one.
    CHECK(row.measured_speedup == doctest::Approx(row.predicted_speedup));
    CHECK(row.speedup_error == doctest::Approx(0.0));
  }
  // Three ratios 1/1.1 and two 1/2.2: the 95% interval of the median spans all five.
  CHECK(report.rows[1].error_ci == doctest::Approx((1 / 1.1 - 1 / 2.2) / 2 / (1 / 1.1)));
  CHECK(report.mean_abs_step_error == doctest::Approx(1 - 1 / 1.1));
}

TEST_CASE("a replay's task costs are the measured durations") {
  const GraphConfig config = config_for(kMlp, "1f1b", 2, 2, 2);
  const TaskGraph graph = make_graph(config);
  Result measured;
  for (const auto& t : graph.tasks) measured.tasks.push_back({100 * t.id, 100 * t.id + 7 + t.id});
  const TaskGraph replay = with_measured_costs(graph, measured);
  int transfers = 0;
  for (const auto& t : replay.tasks) {
    const std::int64_t handoffs = t.placement == Placement::link ? graph.links[static_cast<std::size_t>(t.resource)].latency_cycles : 0;
    transfers += t.placement == Placement::link;
    CHECK(t.cost_cycles == 7 + t.id + handoffs);
    CHECK(t.memory_cycles == 0);
  }
  CHECK(transfers > 0);
  // Copied by their senders' threads, the transfers' measured copies are their senders' time,
  // right after each one's source (here each transfer reads one task), and a transfer is its
  // handoffs alone.
  const TaskGraph by_senders = with_measured_costs(graph, measured, true);
  std::map<std::int32_t, std::int64_t> copied;  // per source: its transfers' copies
  for (const auto& x : graph.tasks) {
    if (x.placement == Placement::link && x.deps.size() == 1) copied[x.deps[0].task] += 7 + x.id;
  }
  CHECK_FALSE(copied.empty());
  for (const auto& t : by_senders.tasks) {
    if (t.placement == Placement::link) {
      CHECK(t.cost_cycles == graph.links[static_cast<std::size_t>(t.resource)].latency_cycles);
      continue;
    }
    const auto extra = copied.find(t.id);
    CHECK(t.cost_cycles == replay.tasks[static_cast<std::size_t>(t.id)].cost_cycles + (extra == copied.end() ? 0 : extra->second));
  }
  // A link whose handoffs were timed apart from its latency (a GPU's: a copy's round trip and two
  // handoffs) adds the handoffs alone: the measured transfer waited for its copy's round trip.
  TaskGraph split = graph;
  for (auto& link : split.links) {
    link.latency_cycles = 100;
    link.wake_cycles = 30;
    link.delivery_cycles = 20;
  }
  const TaskGraph split_replay = with_measured_costs(split, measured);
  for (const auto& link : split_replay.links) CHECK(link.latency_cycles == 50);
  for (const auto& t : split_replay.tasks) CHECK(t.cost_cycles == 7 + t.id + (t.placement == Placement::link ? 50 : 0));
  // The table's gap between tasks (whole cycles at the graph's clock) follows every processor
  // task and every copy a sender made: 2 us at 3 GHz are 6000 cycles.
  REQUIRE(graph.clock_hz == doctest::Approx(3e9));
  const TaskGraph gapped = with_measured_costs(graph, measured, false, 2e-6);
  for (const auto& t : gapped.tasks) {
    CHECK(t.cost_cycles == replay.tasks[static_cast<std::size_t>(t.id)].cost_cycles + (t.placement == Placement::processor ? 6000 : 0));
  }
  const TaskGraph gapped_senders = with_measured_costs(graph, measured, true, 2e-6);
  std::map<std::int32_t, std::int64_t> copies_after;  // per source: how many transfers its thread copied
  for (const auto& x : graph.tasks) {
    if (x.placement == Placement::link && x.deps.size() == 1) ++copies_after[x.deps[0].task];
  }
  for (const auto& t : gapped_senders.tasks) {
    const auto copies = copies_after.find(t.id);
    const std::int64_t gaps = t.placement == Placement::processor ? 6000 * (1 + (copies == copies_after.end() ? 0 : copies->second)) : 0;
    CHECK(t.cost_cycles == by_senders.tasks[static_cast<std::size_t>(t.id)].cost_cycles + gaps);
  }
  CHECK_THROWS_AS(with_measured_costs(graph, measured, false, -1e-6), Error);
  measured.tasks.pop_back();
  CHECK_THROWS_AS(with_measured_costs(graph, measured), Error);
}

TEST_CASE("busy concurrency: how many processors run a task while one does, over their busy time") {
  TaskGraph g;
  g.processors.resize(2);
  g.links.resize(1);
  auto add = [&](Placement placement, std::int32_t resource) {
    Task t;
    t.id = static_cast<std::int32_t>(g.tasks.size());
    t.placement = placement;
    t.resource = resource;
    g.tasks.push_back(t);
  };
  add(Placement::processor, 0);
  add(Placement::processor, 1);
  add(Placement::link, 0);  // a transfer is no processor's work
  Result r;
  // p0 busy [0, 10), p1 [5, 15): one busy for 5 + 5 cycles, two for 5; by busy time:
  // (1 x 5 + 2 x 10 + 1 x 5) / (5 + 10 + 5) = 1.5.
  r.tasks = {{0, 10}, {5, 15}, {0, 100}};
  CHECK(busy_concurrency(g, r) == doctest::Approx(1.5));
  // One after the other (the second starts as the first ends): never two at once.
  r.tasks = {{0, 10}, {10, 20}, {0, 100}};
  CHECK(busy_concurrency(g, r) == doctest::Approx(1.0));
  // Always together.
  r.tasks = {{3, 9}, {3, 9}, {0, 1}};
  CHECK(busy_concurrency(g, r) == doctest::Approx(2.0));
  r.tasks = {{0, 0}, {4, 4}, {0, 1}};
  CHECK(busy_concurrency(g, r) == 0);  // no processor work at all
  r.tasks.pop_back();
  CHECK_THROWS_AS(busy_concurrency(g, r), Error);
}

TEST_CASE("validation: predicted peak memory is the measured one (the executor holds what the graph declares)") {
  const Dataset data = data_for(kLenet);
  ValidationOptions options;
  options.schedules = {"gpipe", "1f1b", "pipedream"};
  options.processors = {1, 2};
  options.runs = 3;
  const ValidationReport report = cpu::validate_cpu(config_for(kLenet, "gpipe", 1, 2, 2), data, options,
                                                    [](const TaskGraph& g) { return evaluate(g); });
  for (const auto& row : report.rows) {
    CAPTURE(row.schedule);
    CAPTURE(row.processors);
    CHECK(static_cast<double>(row.predicted_peak_bytes) == doctest::Approx(static_cast<double>(row.measured_peak_bytes)).epsilon(0.02));
    CHECK(row.measured_peak_max_bytes >= row.measured_peak_bytes);  // the median run's, and the highest run's
    // A steady step's peak likewise, paired by round; no step holds more than its run.
    CHECK(static_cast<double>(row.predicted_step_peak_bytes) == doctest::Approx(static_cast<double>(row.measured_step_peak_bytes)).epsilon(0.02));
    CHECK(std::abs(row.step_peak_error) <= 0.02);
    CHECK(row.measured_step_peak_bytes <= row.measured_peak_bytes);
    CHECK(row.measured_rounds_step_peak_bytes.size() == 3);
  }
}

TEST_CASE("Fashion-MNIST from Debian's dataset-fashion-mnist, when installed") {
  if (!std::filesystem::exists(kFashionMnistDir)) {
    MESSAGE("skipped: " << kFashionMnistDir << " not present (apt-get install dataset-fashion-mnist)");
    return;
  }
  const Dataset test = load_fashion_mnist(kFashionMnistDir, "test");
  CHECK(test.size() == 10000);
  CHECK(test.classes == 10);
  CHECK(test.sample_shape == std::vector<std::int64_t>{1, 28, 28});
  // Balanced classes: 1000 each in the test split.
  std::vector<int> counts(10, 0);
  for (const auto label : test.labels) ++counts[static_cast<std::size_t>(label)];
  for (const auto count : counts) CHECK(count == 1000);
}

TEST_CASE("kendall tau-b: ties count for neither ordering, all ties are undefined") {
  CHECK(pipetwin::kendall_tau({1, 2, 3}, {10, 20, 30}) == doctest::Approx(1.0));
  CHECK(pipetwin::kendall_tau({1, 2, 3}, {30, 20, 10}) == doctest::Approx(-1.0));
  // One tie in the first: C = 2, D = 0 over sqrt((3 - 1) (3 - 0)) pairs (tau-a said 2/3).
  CHECK(pipetwin::kendall_tau({1, 1, 2}, {1, 2, 3}) == doctest::Approx(2.0 / std::sqrt(6.0)));
  // Every schedule equal at P = 1: no ordering (tau-a said 0 or, with ties in both, -0.5).
  CHECK(std::isnan(pipetwin::kendall_tau({1, 1, 1}, {3, 1, 2})));
  CHECK(std::isnan(pipetwin::kendall_tau({5}, {7})));
  // Over chosen pairs: {1,2,3,4} against {1,2,4,3} has C = 5, D = 1 (tau 4/6); leaving out the
  // swapped pair (2, 3) leaves 5 concordant of 5.
  CHECK(pipetwin::kendall_tau({1, 2, 3, 4}, {1, 2, 4, 3}) == doctest::Approx(4.0 / 6.0));
  const auto not_the_swap = [](std::size_t i, std::size_t j) { return !(i == 2 && j == 3); };
  CHECK(pipetwin::kendall_tau_where({1, 2, 3, 4}, {1, 2, 4, 3}, not_the_swap) == doctest::Approx(1.0));
  CHECK(std::isnan(pipetwin::kendall_tau_where({1, 2}, {1, 2}, [](std::size_t, std::size_t) { return false; })));
}

TEST_CASE("threads that spin before they sleep train the same weights, bit for bit") {
  const Dataset data = data_for(kLenet);
  for (const std::string schedule : {"1f1b", "pipedream", "zb-h1"}) {
    CAPTURE(schedule);
    const GraphConfig config = config_for(kLenet, schedule, 2, 4, 3);
    const ScheduleRequest request = make_request(config);
    const TaskGraph graph = make_graph(config);
    const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, 7);
    TrainingOptions sleeping;
    sleeping.handoff_spin_s = 0;
    TrainingOptions spinning;
    spinning.handoff_spin_s = 200e-6;
    const TrainingRun a = cpu::run_cpu(graph, request.network, sampler, sleeping);
    const TrainingRun b = cpu::run_cpu(graph, request.network, sampler, spinning);
    REQUIRE(a.final_weights.size() == b.final_weights.size());
    for (std::size_t l = 0; l < a.final_weights.size(); ++l) CHECK(a.final_weights[l] == b.final_weights[l]);
  }
  TrainingOptions negative;
  negative.handoff_spin_s = -1e-6;
  const GraphConfig config = config_for(kLenet, "1f1b", 2, 4, 1);
  const ScheduleRequest request = make_request(config);
  const BatchSampler sampler(data, request.network.batch, 4, 1, 7);
  CHECK_THROWS_WITH_AS(cpu::run_cpu(make_graph(config), request.network, sampler, negative),
                       doctest::Contains("the handoff spin must be from 0 to 1 second"), Error);
  // The automatic spin: where the processors are as many as the CPUs, in one process, and only there.
  const int cpus = usable_cpu_count();
  CHECK(TrainingOptions{}.handoff_spin_s == kAutomaticHandoffSpin);
  CHECK(handoff_spin_for(cpus, kAutomaticHandoffSpin, false) == (cpus > 1 ? kHandoffSpinWhereEveryCoreHasAThread_s : 0));
  CHECK(handoff_spin_for(1, kAutomaticHandoffSpin, false) == 0);  // one processor hands off nothing
  CHECK(handoff_spin_for(cpus + 1, kAutomaticHandoffSpin, false) == 0);
  if (cpus > 1) CHECK(handoff_spin_for(cpus - 1, kAutomaticHandoffSpin, false) == 0);
  CHECK(handoff_spin_for(cpus, kAutomaticHandoffSpin, true) == 0);  // ranks may share the CPUs
  CHECK(handoff_spin_for(cpus + 1, 3e-4, false) == 3e-4);             // asked: as asked
  CHECK(handoff_spin_for(cpus, 0, false) == 0);
  // A run's: no automatic spin where a link has a thread of its own, which a spinning processor
  // would keep from its core.
  const TaskGraph two = make_graph(config_for(kLenet, "1f1b", 2, 4, 1));
  TrainingOptions on_links;
  on_links.transfer_threads = TransferThreads::links;
  TrainingOptions on_senders;
  on_senders.transfer_threads = TransferThreads::senders;
  CHECK(cpu::handoff_spin_of_run(two, on_links) == 0);
  CHECK(cpu::handoff_spin_of_run(two, on_senders) == automatic_handoff_spin_s(2));
  on_links.handoff_spin_s = 1e-4;
  CHECK(cpu::handoff_spin_of_run(two, on_links) == 1e-4);  // asked: as asked
}

TEST_CASE("transfers copied by their senders' threads run right after their sources and train the same weights, bit for bit") {
  // Which thread ran each task, and the order of every start and end across threads.
  struct WhoRanWhat final : EngineObserver {
    std::mutex mutex;
    std::int64_t events = 0;
    std::map<std::int32_t, std::thread::id> thread_of_task;
    std::map<std::int32_t, std::int64_t> start, end;  // per task: its place among all events
    void task_started(std::int32_t task, std::int64_t) override {
      std::lock_guard<std::mutex> lock(mutex);
      thread_of_task[task] = std::this_thread::get_id();
      start[task] = events++;
    }
    void task_ended(std::int32_t task, std::int64_t) override {
      std::lock_guard<std::mutex> lock(mutex);
      end[task] = events++;
    }
  };
  const Dataset data = data_for(kLenet);
  for (const auto& each_schedule_processors : std::vector<std::pair<std::string, int>>{
           {"1f1b", 2}, {"pipedream", 2}, {"zb-h1", 2}, {"layerpipe", 2}, {"1f1b", 3}}) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& schedule = each_schedule_processors.first;
    const auto& processors = each_schedule_processors.second;
    CAPTURE(schedule);
    CAPTURE(processors);
    const GraphConfig config = config_for(kLenet, schedule, processors, 4, 3);
    const ScheduleRequest request = make_request(config);
    const TaskGraph graph = make_graph(config);
    const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, 7);
    WhoRanWhat by_links, by_senders;
    TrainingOptions links;
    links.transfer_threads = TransferThreads::links;
    links.observers = {&by_links};
    TrainingOptions senders;
    senders.transfer_threads = TransferThreads::senders;
    senders.observers = {&by_senders};
    const TrainingRun a = cpu::run_cpu(graph, request.network, sampler, links);
    const TrainingRun b = cpu::run_cpu(graph, request.network, sampler, senders);
    CHECK_FALSE(a.copies_on_senders);
    CHECK(b.copies_on_senders);
    REQUIRE(a.final_weights.size() == b.final_weights.size());
    for (std::size_t l = 0; l < a.final_weights.size(); ++l) CHECK(a.final_weights[l] == b.final_weights[l]);
    // Every in-order link between processors reads only its sender's tasks here, in its order.
    const std::vector<bool> by_sender = links_copied_by_senders(graph);
    const auto by_processor = tasks_by_processor(graph);
    std::vector<std::size_t> place(graph.tasks.size(), 0);
    for (const auto& order : by_processor) {
      for (std::size_t i = 0; i < order.size(); ++i) place[static_cast<std::size_t>(order[i])] = i;
    }
    int transfers = 0;
    for (const auto& t : graph.tasks) {
      if (t.placement != Placement::link) continue;
      const LinkInfo& link = graph.links[static_cast<std::size_t>(t.resource)];
      INFO(describe_task(graph, t));
      REQUIRE(link.src != kHost);
      REQUIRE(by_sender[static_cast<std::size_t>(t.resource)]);
      // The last task it reads on its sender; the sender's task after that one, if any.
      std::int32_t last = -1;
      for (const auto& d : t.deps) {
        CHECK(graph.tasks[static_cast<std::size_t>(d.task)].resource == link.src);
        if (last < 0 || place[static_cast<std::size_t>(d.task)] > place[static_cast<std::size_t>(last)]) last = d.task;
      }
      REQUIRE(last >= 0);
      const auto& order = by_processor[static_cast<std::size_t>(link.src)];
      const std::size_t at = place[static_cast<std::size_t>(last)];
      // Copied by its sender's thread, after that task ended and before the next one started.
      CHECK(by_senders.thread_of_task.at(t.id) == by_senders.thread_of_task.at(last));
      CHECK(by_senders.start.at(t.id) > by_senders.end.at(last));
      if (at + 1 < order.size()) CHECK(by_senders.end.at(t.id) < by_senders.start.at(order[at + 1]));
      // With links' threads, by another thread than the sender's.
      CHECK(by_links.thread_of_task.at(t.id) != by_links.thread_of_task.at(last));
      ++transfers;
    }
    CHECK(transfers > 0);
  }
  // automatic: senders where the graph has a processor for every CPU this process may run on.
  const int cpus = usable_cpu_count();
  REQUIRE(cpus >= 1);
  const GraphConfig every_cpu = config_for(kLenet, "1f1b", std::min(cpus, 4), 4, 1);
  CHECK(cpu::transfer_threads_for(make_graph(every_cpu), TransferThreads::automatic) ==
        (cpus <= 4 ? TransferThreads::senders : TransferThreads::links));
  const TaskGraph one = make_graph(config_for(kLenet, "1f1b", 1, 4, 1));
  CHECK(cpu::transfer_threads_for(one, TransferThreads::automatic) == (cpus == 1 ? TransferThreads::senders : TransferThreads::links));
  CHECK(cpu::transfer_threads_for(one, TransferThreads::links) == TransferThreads::links);
  CHECK(cpu::transfer_threads_for(one, TransferThreads::senders) == TransferThreads::senders);
}

#if defined(__linux__)
TEST_CASE("pinned threads run on their processors' CPUs and train the same weights, bit for bit") {
  const std::vector<int> cpus = usable_cpu_ids();
  REQUIRE_FALSE(cpus.empty());
  // Where each task ran: the CPU its thread was on when it started.
  struct WhereTasksRun final : EngineObserver {
    std::mutex mutex;
    std::map<std::int32_t, int> cpu_of_task;
    void task_started(std::int32_t task, std::int64_t) override {
      std::lock_guard<std::mutex> lock(mutex);
      cpu_of_task[task] = sched_getcpu();
    }
  };
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "1f1b", 3, 4, 2);
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, 7);
  WhereTasksRun where;
  TrainingOptions pinned;
  pinned.pin_cpus = cpus;
  pinned.observers = {&where};
  const TrainingRun a = cpu::run_cpu(graph, request.network, sampler, TrainingOptions{});
  const TrainingRun b = cpu::run_cpu(graph, request.network, sampler, pinned);
  REQUIRE(a.final_weights.size() == b.final_weights.size());
  for (std::size_t l = 0; l < a.final_weights.size(); ++l) CHECK(a.final_weights[l] == b.final_weights[l]);
  // Processor p on the p-th CPU, in turn (3 processors on this machine's CPUs); a link's thread on
  // its sender's.
  int checked = 0;
  for (const auto& t : graph.tasks) {
    const auto ran = where.cpu_of_task.find(t.id);
    if (ran == where.cpu_of_task.end()) continue;
    const LinkInfo* link = t.placement == Placement::link ? &graph.links[static_cast<std::size_t>(t.resource)] : nullptr;
    const int processor = link == nullptr ? t.resource : (link->src != kHost ? link->src : link->dst);
    INFO(describe_task(graph, t));
    CHECK(ran->second == cpus[static_cast<std::size_t>(processor) % cpus.size()]);
    ++checked;
  }
  CHECK(checked == static_cast<int>(graph.tasks.size()));
  // A CPU the process may not run on is an error naming it.
  TrainingOptions elsewhere;
  elsewhere.pin_cpus = {CPU_SETSIZE - 1};
  const std::string refused = "cannot pin a thread to CPU " + std::to_string(CPU_SETSIZE - 1);
  CHECK_THROWS_WITH_AS(cpu::run_cpu(graph, request.network, sampler, elsewhere), doctest::Contains(refused.c_str()), Error);
}
#endif

TEST_CASE("a calibration keeps each layer's mean time, robust to a stall: the median of 8 blocks' means") {
  // mlp, sequential on one processor: 17 minibatches of 4 microbatches, the first left out as
  // warm-up: 64 forwards. Layer 0's forward takes 10, 10, 10, 13 us in turn (a right-skewed time:
  // mean 10.75 us, median 10 us), and one of them stalls for 5 ms. Each block of 8 has mean 10.75
  // us but the stalled one's: the table keeps 10.75 us, where the median would say 10 and the
  // plain mean 88.9.
  const GraphConfig config = config_for(kMlp, "sequential", 1, 4, 17);
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  TrainingRun run;
  run.result.tasks.assign(graph.tasks.size(), {});
  int forwards = 0;
  for (const auto& t : graph.tasks) {
    if (t.kind != TaskKind::F || t.minibatch < 1) continue;
    double seconds = (forwards % 4 == 3 ? 13e-6 : 10e-6);
    if (forwards == 37) seconds += 5e-3;
    run.layer_times.push_back({t.id, 0, TaskKind::F, seconds});
    ++forwards;
  }
  REQUIRE(forwards == 64);
  const Calibration c = calibration_from_runs(graph, request.network, {run}, 1);
  CHECK(c.layers.at(request.network.layers[0].name).forward_s == doctest::Approx(10.75e-6).scale(0));
  // Fewer samples than blocks: each is a block, and the table keeps their (upper) median.
  run.layer_times.resize(5);  // 10, 10, 10, 13, 10 us
  CHECK(calibration_from_runs(graph, request.network, {run}, 1).layers.at(request.network.layers[0].name).forward_s ==
        doctest::Approx(10e-6).scale(0));
}

TEST_CASE("a table timed with waits: each layer time less what the wait before its task cost it, by the curve") {
  // mlp, sequential on one processor, its tasks laid out by hand one after the other, each
  // forward after a wait of 0, 5 or 20 ms in turn. Layer 0's forward takes 10 us plus what the
  // curve charges that wait for its bytes (its weights, its output and, the task's first layer,
  // its input, for the microbatch's samples); the table, told the curve, keeps 10 us. Told too
  // that the curve was measured over half the task's bytes (the forward's task holds every layer),
  // it charges the task for that half, the layer its share of it: a run that lost so much gives
  // 10 us again, and the first run, which lost twice that, more.
  const GraphConfig config = config_for(kMlp, "sequential", 1, 4, 5);
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const std::vector<std::pair<double, double>> curve = {{0.01, 1e-10}, {0.04, 2e-10}};
  const Layer& first = request.network.layers[0];
  const std::int64_t n = graph.samples_per_microbatch;
  const double bytes = static_cast<double>(first.param_bytes + (first.output_bytes + first.input_bytes) * n);
  const double waits_s[] = {0, 0.005, 0.02};
  const double per_byte_s[] = {0, 0.5e-10, 1e-10 + (2e-10 - 1e-10) * (0.02 - 0.01) / (0.04 - 0.01)};
  std::int64_t task_bytes = 0;  // a forward's: every layer's
  for (const Task& t : graph.tasks) {
    if (t.kind == TaskKind::F) task_bytes = task_wait_exposed_bytes(graph, t, request.network);
  }
  REQUIRE(task_bytes > static_cast<std::int64_t>(bytes));
  const auto run_losing = [&](double share_lost) {
    TrainingRun run;
    run.result.tasks.assign(graph.tasks.size(), {});
    std::vector<const Task*> in_order;
    for (const auto& t : graph.tasks) {
      if (t.placement == Placement::processor) in_order.push_back(&t);
    }
    std::sort(in_order.begin(), in_order.end(), [](const Task* a, const Task* b) { return a->order < b->order; });
    double now_s = 0;
    int forwards = 0;
    double plain_sum_s = 0;
    for (const Task* t : in_order) {
      const int which = t->kind == TaskKind::F ? forwards % 3 : 0;
      now_s += waits_s[which];
      const double seconds = 10e-6 + share_lost * per_byte_s[which] * bytes;
      if (t->kind == TaskKind::F && t->minibatch >= 1) {
        run.layer_times.push_back({t->id, 0, TaskKind::F, seconds});
        plain_sum_s += seconds;
      }
      if (t->kind == TaskKind::F) ++forwards;
      run.result.tasks[static_cast<std::size_t>(t->id)] = {std::llround(now_s * graph.clock_hz), std::llround((now_s + 100e-6) * graph.clock_hz)};
      now_s += 100e-6;
    }
    REQUIRE(run.layer_times.size() == 16);
    CHECK(plain_sum_s > 16 * 10e-6);
    return run;
  };
  const TrainingRun run = run_losing(1.0);
  const Calibration told = calibration_from_runs(graph, request.network, {run}, 1, WaitCurve{curve, 0});
  CHECK(told.layers.at(first.name).forward_s == doctest::Approx(10e-6).epsilon(1e-6).scale(0));
  CHECK(told.wait_curve.extra_s_per_byte == curve);
  CHECK(told.wait_curve.footprint_bytes == 0);
  const WaitCurve over_half{curve, task_bytes / 2};
  const double half = static_cast<double>(task_bytes / 2) / static_cast<double>(task_bytes);
  const Calibration capped = calibration_from_runs(graph, request.network, {run_losing(half)}, 1, over_half);
  CHECK(capped.layers.at(first.name).forward_s == doctest::Approx(10e-6).epsilon(1e-6).scale(0));
  CHECK(capped.wait_curve.footprint_bytes == task_bytes / 2);
  // The first run's losses, half of each taken off: what is left of them stays in the table.
  std::vector<double> left_s;
  for (const LayerTime& time : run.layer_times) left_s.push_back(time.seconds - half * (time.seconds - 10e-6));
  const double kept_s = calibration_from_runs(graph, request.network, {run}, 1, over_half).layers.at(first.name).forward_s;
  CHECK(kept_s == doctest::Approx(median_of_block_means(left_s)).epsilon(1e-9).scale(0));
  CHECK(kept_s > 10e-6);
  // Without the curve the table holds the waits' cost (and no curve).
  const Calibration untold = calibration_from_runs(graph, request.network, {run}, 1);
  CHECK(untold.layers.at(first.name).forward_s > 10e-6 + 0.5 * per_byte_s[1] * bytes);
  CHECK(untold.wait_curve.extra_s_per_byte.empty());
}

TEST_CASE("task overheads: the line through the medians of the smallest and the largest tasks") {
  // 5 us per task and 3 us per layer, with an outlier in each group that the medians ignore (five
  // samples a group, so that the median is the one on the line).
  std::vector<TaskOverhead> overheads;
  for (const double noise : {0.0, 0.1e-6, -0.1e-6, 50e-6, -0.2e-6}) {
    overheads.push_back({1, 8e-6 + noise});
    overheads.push_back({4, 17e-6 + noise});
    overheads.push_back({8, 29e-6 + noise});
  }
  Calibration c;
  fit_task_overheads(overheads, c);
  CHECK(c.task_overhead_s == doctest::Approx(5e-6).scale(0));
  CHECK(c.layer_overhead_s == doctest::Approx(3e-6).scale(0));
  // Smaller tasks costing more than larger ones: no negative cost per layer.
  fit_task_overheads({{1, 40e-6}, {8, 20e-6}}, c);
  CHECK(c.layer_overhead_s == 0);
  CHECK(c.task_overhead_s == doctest::Approx(40e-6).scale(0));
  // One size of task: all of it per task.
  fit_task_overheads({{5, 10e-6}, {5, 12e-6}, {5, 11e-6}}, c);
  CHECK(c.layer_overhead_s == 0);
  CHECK(c.task_overhead_s == doctest::Approx(11e-6).scale(0));
}

namespace {

// A run of `graph` made up to test the table's gaps: each thread (a processor's, with the
// transfers its sender copies when `senders_copy`: copied_after) takes its tasks in the
// executor's order; one starts `gap_cycles` after the thread's previous ends, or
// `handoff_cycles` after its last input ends where that is later (it waited); tasks of minibatch
// 0 have gaps of `first_gap_cycles`. A processor task lasts 10000 cycles, a copy 2400, a
// transfer on a link's own thread 5000 (links run at once). One layer time per processor task.
TrainingRun made_up_run(const TaskGraph& graph, bool senders_copy, std::int64_t gap_cycles, std::int64_t first_gap_cycles,
                        std::int64_t handoff_cycles) {
  const std::vector<std::int32_t> after = senders_copy ? copied_after(graph) : std::vector<std::int32_t>(graph.tasks.size(), -1);
  std::vector<std::vector<std::int32_t>> threads = tasks_by_processor(graph);
  for (auto& order : threads) {  // each copy right after the task it reads, in the link's order
    std::vector<std::int32_t> with_copies;
    for (const auto id : order) {
      with_copies.push_back(id);
      for (const auto& link_order : tasks_by_link(graph)) {
        for (const auto x : link_order) {
          if (after[static_cast<std::size_t>(x)] == id) with_copies.push_back(x);
        }
      }
    }
    order = with_copies;
  }
  TrainingRun run;
  run.copies_on_senders = senders_copy;
  run.result.tasks.resize(graph.tasks.size());
  std::vector<bool> timed(graph.tasks.size(), false);
  std::vector<std::size_t> next(threads.size(), 0);
  std::vector<std::int64_t> free_at(threads.size(), 0);
  const auto inputs_timed = [&](const Task& t) {
    return std::all_of(t.deps.begin(), t.deps.end(), [&](const Dep& d) { return timed[static_cast<std::size_t>(d.task)]; });
  };
  const auto ready_at = [&](const Task& t) {
    std::int64_t ready = 0;
    for (const auto& d : t.deps) ready = std::max(ready, run.result.tasks[static_cast<std::size_t>(d.task)].end_cycles);
    return ready;
  };
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (const auto& link_order : tasks_by_link(graph)) {  // a link's thread: as soon as its source ends
      for (const auto x : link_order) {
        const Task& t = graph.tasks[static_cast<std::size_t>(x)];
        if (timed[static_cast<std::size_t>(x)] || after[static_cast<std::size_t>(x)] >= 0 || !inputs_timed(t)) continue;
        run.result.tasks[static_cast<std::size_t>(x)] = {ready_at(t), ready_at(t) + 5000};
        timed[static_cast<std::size_t>(x)] = progressed = true;
      }
    }
    for (std::size_t p = 0; p < threads.size(); ++p) {
      while (next[p] < threads[p].size()) {
        const Task& t = graph.tasks[static_cast<std::size_t>(threads[p][next[p]])];
        if (!inputs_timed(t)) break;
        const std::int64_t gap = t.minibatch == 0 ? first_gap_cycles : gap_cycles;
        const std::int64_t start = next[p] == 0 ? ready_at(t) : std::max(free_at[p] + gap, ready_at(t) > free_at[p] ? ready_at(t) + handoff_cycles : 0);
        const std::int64_t end = start + (t.placement == Placement::processor ? 10000 : 2400);
        run.result.tasks[static_cast<std::size_t>(t.id)] = {start, end};
        if (t.placement == Placement::processor) run.layer_times.push_back({t.id, t.first_layer, t.kind, 1e-6, 0});
        timed[static_cast<std::size_t>(t.id)] = progressed = true;
        free_at[p] = end;
        ++next[p];
      }
    }
  }
  REQUIRE(std::all_of(timed.begin(), timed.end(), [](bool b) { return b; }));
  return run;
}

}  // namespace

TEST_CASE("a table's gap between tasks: from a task's end to the next's start on its thread, where the next did not wait") {
  // mlp, 1f1b on 2 processors, 3 minibatches (the first skipped); 3 GHz: 900 cycles are 0.3 us.
  const TaskGraph graph = make_graph(config_for(kMlp, "1f1b", 2, 2, 3));
  REQUIRE(graph.clock_hz == doctest::Approx(3e9));
  const Network network = make_request(config_for(kMlp, "1f1b", 2, 2, 3)).network;
  // Links with threads of their own: the processors' gaps alone; tasks that waited for a transfer
  // started 3000 cycles after it (a handoff), which is not a gap; the first minibatch's gaps of
  // 9000 cycles are the warm-up's.
  const TrainingRun links = made_up_run(graph, false, 900, 9000, 3000);
  const Calibration by_links = calibration_from_run(graph, network, links, 1);
  CHECK(by_links.task_gap_s == doctest::Approx(0.3e-6).scale(0));
  CHECK(by_links.pipeline_copy_seconds.empty());
  // Where the run says how long each task's thread spent reading its layer times after its end
  // (0.1 us here), a run that does not record them would not have spent that.
  TrainingRun reading = links;
  reading.layer_reading_s.assign(graph.tasks.size(), 0.1e-6);
  CHECK(calibration_from_run(graph, network, reading, 1).task_gap_s == doctest::Approx(0.2e-6).scale(0));
  // Senders copying: a copy is one more step of its thread, with the gap before and after it, and
  // its duration is the table's copy made in a pipeline, per size.
  const TrainingRun senders = made_up_run(graph, true, 900, 9000, 3000);
  const Calibration by_senders = calibration_from_run(graph, network, senders, 1);
  CHECK(by_senders.task_gap_s == doctest::Approx(0.3e-6).scale(0));
  std::set<std::int64_t> sizes;
  const std::vector<std::int32_t> after = copied_after(graph);
  for (const auto& t : graph.tasks) {
    if (after[static_cast<std::size_t>(t.id)] >= 0 && t.minibatch >= 1) sizes.insert(t.bytes);
  }
  REQUIRE_FALSE(sizes.empty());
  REQUIRE(by_senders.pipeline_copy_seconds.size() == sizes.size());
  for (const auto& [bytes, seconds] : by_senders.pipeline_copy_seconds) {
    CHECK(sizes.count(bytes) == 1);
    CHECK(seconds == doctest::Approx(0.8e-6).scale(0));  // 2400 cycles
  }
  // Beyond copies timed in a row: what the table's copy of each size leaves, the median; never
  // below 0; nothing without pipeline copies.
  Calibration c = by_senders;
  c.copy_seconds = {{1, 1e-9}};  // 1 ns a byte from the first point on
  std::vector<double> extra_s;
  for (const auto& [bytes, seconds] : c.pipeline_copy_seconds) extra_s.push_back(std::max(0.0, seconds - static_cast<double>(bytes) * 1e-9));
  std::sort(extra_s.begin(), extra_s.end());
  CHECK(c.pipeline_copy_extra_s() == doctest::Approx(extra_s[extra_s.size() / 2]));
  // A sender's copy: of a size the pipeline made, what it took there; of another, the row's copy
  // plus that median.
  const auto [made_bytes, made_s] = c.pipeline_copy_seconds.front();
  CHECK(c.sender_copy_s(made_bytes) == made_s);
  CHECK(c.sender_copy_s(made_bytes + 1) == doctest::Approx(static_cast<double>(made_bytes + 1) * 1e-9 + c.pipeline_copy_extra_s()).scale(0));
  c.copy_seconds = {{1, 1.0}};
  CHECK(c.pipeline_copy_extra_s() == 0);
  c.pipeline_copy_seconds.clear();
  CHECK(c.pipeline_copy_extra_s() == 0);
  CHECK(c.sender_copy_s(made_bytes) == doctest::Approx(static_cast<double>(made_bytes)));  // the row's alone
  c.copy_seconds.clear();
  CHECK(c.sender_copy_s(made_bytes) == -1);  // nothing measured
}

TEST_CASE("task overheads per kind: each kind's median beyond the common cost per layer") {
  // 3 us per layer throughout (the medians of the 1-layer and the 4-layer tasks give it);
  // forwards cost 6 us per task beyond it, backwards of 4 layers 2 us, split BAs of 1 layer 1 us;
  // one forward is an outlier the medians ignore.
  std::vector<TaskOverhead> overheads;
  for (int k = 0; k < 3; ++k) {
    overheads.push_back({1, 9e-6, TaskKind::F});
    overheads.push_back({4, 18e-6, TaskKind::F});
    overheads.push_back({4, 14e-6, TaskKind::B});
    overheads.push_back({1, 4e-6, TaskKind::BA});
  }
  overheads.push_back({1, 60e-6, TaskKind::F});
  // Updates of 4 layers, 0.5 us beyond their layers: not on the line, and nothing per layer.
  for (int k = 0; k < 5; ++k) overheads.push_back({4, 0.5e-6, TaskKind::U});
  Calibration c;
  fit_task_overheads(overheads, c);
  CHECK(c.layer_overhead_s == doctest::Approx(3e-6).scale(0));
  CHECK(c.task_overhead_s == doctest::Approx(6e-6).scale(0));
  REQUIRE(c.kind_overhead_s.size() == 4);
  CHECK(c.kind_overhead_s.at(TaskKind::U) == doctest::Approx(0.5e-6).scale(0));
  CHECK(c.kind_overhead_s.at(TaskKind::F) == doctest::Approx(6e-6).scale(0));
  CHECK(c.kind_overhead_s.at(TaskKind::B) == doctest::Approx(2e-6).scale(0));
  CHECK(c.kind_overhead_s.at(TaskKind::BA) == doctest::Approx(1e-6).scale(0));
  // Never below zero.
  fit_task_overheads({{1, 10e-6, TaskKind::F}, {8, 31e-6, TaskKind::F}, {8, 1e-6, TaskKind::BW}}, c);
  CHECK(c.kind_overhead_s.at(TaskKind::BW) == 0);
}

TEST_CASE("the typical task a handoff is timed after: a stage's, the table's tasks over its processors") {
  // Two layers: forwards 1 + 3 ms, fused backwards 2 + 6 ms (one measured, one from BA + BW); a
  // one-processor task of a microbatch is 4 ms forward and 8 backward, 6 on average.
  Calibration c;
  c.layers["a"].forward_s = 1e-3;
  c.layers["a"].backward_s = 2e-3;
  c.layers["b"].forward_s = 3e-3;
  c.layers["b"].activation_grad_s = 2.5e-3;
  c.layers["b"].weight_grad_s = 3.5e-3;
  CHECK(typical_task_s(c) == doctest::Approx(6e-3));
  c.concurrent = 4;  // a table for 4 processors: each stage's tasks hold a quarter of the layers
  CHECK(typical_task_s(c) == doctest::Approx(1.5e-3));
}

TEST_CASE("a calibration of copies at once pools every copy's samples") {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 2, 3);
  // A runner that counts the copies running at the same time, and the runs.
  std::atomic<int> running{0}, most{0}, runs{0};
  std::vector<TrainingRun> recorded(6);  // the sequential copies, the one-task-per-layer copies, the zb-h1 copies
  const Runner counting = [&](const TaskGraph& g, const Network& n, const BatchSampler& s, const TrainingOptions& o) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    TrainingRun run = cpu::run_cpu(g, n, s, o);
    // Hold until both copies have started: they overlap, however the machine schedules them.
    while (most.load() < 2) std::this_thread::yield();
    --running;
    recorded[static_cast<std::size_t>(runs++)] = run;
    return run;
  };
  const Calibration two = profile_layers(config, data, 4, 7, counting, {}, 2);
  CHECK(runs.load() == 6);
  CHECK(most.load() == 2);
  CHECK(two.concurrent == 2);
  // The pooled median of each layer's F is the median of both copies' samples together, each
  // copy's second half: 4 microbatches asked for, 2 a minibatch, so 2 timed after 2 of warm-up.
  const std::int32_t timed = std::max(1, (4 + config.microbatches - 1) / config.microbatches);
  const TaskGraph graph = make_graph([&] {
    GraphConfig c = config;
    c.minibatches = 2 * timed;
    return c;
  }());
  const Network network = make_request(config).network;
  for (std::size_t l = 0; l < network.size(); ++l) {
    std::vector<double> samples;
    for (int k = 0; k < 2; ++k) {
      for (const auto& time : recorded[static_cast<std::size_t>(k)].layer_times) {
        if (time.layer == static_cast<std::int32_t>(l) && time.kind == TaskKind::F && graph.tasks[static_cast<std::size_t>(time.task)].minibatch >= timed) {
          samples.push_back(time.seconds);
        }
      }
    }
    CAPTURE(l);
    CHECK(samples.size() == 2 * 4);  // two copies x (2 minibatches x 2 microbatches)
    CHECK(two.layers.at(network.layers[l].name).forward_s == median_of(samples));
  }
  CHECK_THROWS_AS(profile_layers(config, data, 4, 7, counting, {}, 0), Error);
}

TEST_CASE("layer times: a fused B goes back to the linear output once, and records what a split BA and BW would cost") {
  // B = to_linear + dW + dx, BA = to_linear + dx, BW = to_linear + dW, all from one measurement:
  // so max(BA, BW) <= B <= BA + BW for every layer of every B task (layer 0 has no BA: B = BW).
  const Dataset data = data_for(kResnet);
  for (const std::string schedule : {"sequential", "zb-h1"}) {
    CAPTURE(schedule);
    const GraphConfig config = config_for(kResnet, schedule, schedule == "sequential" ? 1 : 2, 2, 2);
    const ScheduleRequest request = make_request(config);
    const TaskGraph graph = make_graph(config);
    const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, 7);
    TrainingOptions options;
    options.record_layer_times = true;
    const TrainingRun run = cpu::run_cpu(graph, request.network, sampler, options);
    std::map<std::pair<std::int32_t, std::int32_t>, std::map<TaskKind, double>> by_task_layer;
    std::map<std::pair<std::int32_t, std::int32_t>, std::map<TaskKind, double>> to_linear_by_task_layer;
    for (const LayerTime& time : run.layer_times) {
      auto& kinds = by_task_layer[{time.task, time.layer}];
      CHECK(kinds.count(time.kind) == 0);  // one record per kind
      kinds[time.kind] = time.seconds;
      to_linear_by_task_layer[{time.task, time.layer}][time.kind] = time.to_linear_s;
      // A backward's way back to the linear output is part of its time; other kinds have none.
      CHECK(time.to_linear_s >= 0);
      CHECK(time.to_linear_s <= time.seconds);
      if (!is_backward(time.kind)) CHECK(time.to_linear_s == 0);
    }
    int fused = 0;
    for (const auto& each_key_kinds : by_task_layer) {
      // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
      const auto& key = each_key_kinds.first;
      const auto& kinds = each_key_kinds.second;
      const Task& task = graph.tasks[static_cast<std::size_t>(key.first)];
      CAPTURE(key.second);
      if (task.kind == TaskKind::B) {
        ++fused;
        REQUIRE(kinds.count(TaskKind::B) == 1);
        REQUIRE(kinds.count(TaskKind::BW) == 1);
        const double ba = key.second > 0 ? kinds.at(TaskKind::BA) : 0.0, bw = kinds.at(TaskKind::BW);
        CHECK(kinds.at(TaskKind::B) >= std::max(ba, bw) - 1e-12);
        CHECK(kinds.at(TaskKind::B) <= ba + bw + 1e-12);
        // One way back, shared: each of B, BA and BW reports it, and where all three are timed it
        // is BA + BW - B (what the cost model's to_linear_cycles takes from a table).
        const auto& to_linear = to_linear_by_task_layer.at(key);
        CHECK(to_linear.at(TaskKind::BW) == to_linear.at(TaskKind::B));
        if (key.second > 0) {
          CHECK(to_linear.at(TaskKind::BA) == to_linear.at(TaskKind::B));
          CHECK(to_linear.at(TaskKind::B) == doctest::Approx(ba + bw - kinds.at(TaskKind::B)).epsilon(1e-9));
        }
      } else {
        CHECK(kinds.count(TaskKind::B) == 0);
      }
    }
    CHECK((fused > 0) == (schedule == "sequential"));
    // The calibration takes B from the fused tasks, and only where there are some.
    const Calibration calibration = calibration_from_run(graph, request.network, run, 1);
    for (const auto& layer : request.network.layers) {
      CAPTURE(layer.name);
      CHECK((calibration.layers.at(layer.name).backward_s >= 0) == (schedule == "sequential"));
    }
  }
}

TEST_CASE("layer times reach the observers once every task has ended, each within its task's time") {
  // Reported as they were read, they took the observers' lock between tasks, where the other
  // processor's thread waited for it inside the tasks it timed. Now none comes before the last
  // task's end; each task's layers lie within its start and end.
  struct Events final : EngineObserver {
    std::mutex mutex;
    std::int64_t count = 0, last_end = -1, first_layer_time = -1;
    std::map<std::int32_t, std::int64_t> start_cycles, end_cycles;
    std::vector<LayerTime> layer_times;
    void task_started(std::int32_t task, std::int64_t cycles) override {
      std::lock_guard<std::mutex> lock(mutex);
      start_cycles[task] = cycles;
      ++count;
    }
    void task_ended(std::int32_t task, std::int64_t cycles) override {
      std::lock_guard<std::mutex> lock(mutex);
      end_cycles[task] = cycles;
      last_end = count++;
    }
    void layer_timed(std::int32_t task, std::int32_t layer, TaskKind kind, double seconds, double to_linear_s) override {
      std::lock_guard<std::mutex> lock(mutex);
      if (first_layer_time < 0) first_layer_time = count;
      ++count;
      layer_times.push_back({task, layer, kind, seconds, to_linear_s});
    }
  };
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "1f1b", 2, 4, 3);
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const BatchSampler sampler(data, request.network.batch, config.microbatches, config.minibatches, 7);
  Events events;
  TrainingOptions options;
  options.record_layer_times = true;
  options.observers = {&events};
  const TrainingRun run = cpu::run_cpu(graph, request.network, sampler, options);
  REQUIRE(!events.layer_times.empty());
  CHECK(events.first_layer_time > events.last_end);
  // The observers were told what the run keeps, record for record.
  REQUIRE(events.layer_times.size() == run.layer_times.size());
  std::map<std::int32_t, double> split_seconds_by_task;  // a task's layers, a fused B's once (as B)
  for (std::size_t i = 0; i < run.layer_times.size(); ++i) {
    const LayerTime& told = events.layer_times[i];
    const LayerTime& kept = run.layer_times[i];
    CHECK(told.task == kept.task);
    CHECK(told.layer == kept.layer);
    CHECK(told.kind == kept.kind);
    CHECK(told.seconds == kept.seconds);
    const Task& t = graph.tasks[static_cast<std::size_t>(told.task)];
    if (told.kind == t.kind) split_seconds_by_task[told.task] += told.seconds;
  }
  for (const auto& each_task_seconds : split_seconds_by_task) {
    // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
    const auto& task = each_task_seconds.first;
    const auto& seconds = each_task_seconds.second;
    CAPTURE(task);
    const double task_s = static_cast<double>(events.end_cycles.at(task) - events.start_cycles.at(task)) / graph.clock_hz;
    CHECK(seconds <= task_s + 2 / graph.clock_hz);  // the cycles are whole: at most a cycle lost at each end
  }
  // Reading them took each task's thread some time after the task's end, before its next task:
  // kept per task (a task with layer times, a positive time; one without, none), and not there
  // in a run that records none.
  REQUIRE(run.layer_reading_s.size() == graph.tasks.size());
  for (const auto& t : graph.tasks) {
    CAPTURE(t.id);
    CHECK(run.layer_reading_s[static_cast<std::size_t>(t.id)] >= 0);
    CHECK((run.layer_reading_s[static_cast<std::size_t>(t.id)] > 0) == (split_seconds_by_task.count(t.id) == 1));
  }
  CHECK(cpu::run_cpu(graph, request.network, sampler, TrainingOptions{}).layer_reading_s.empty());
}

TEST_CASE("unmarked twins: a run with layer times is made again without, and its tasks' overheads are timed there") {
  const Dataset data = data_for(kLenet);
  const GraphConfig config = config_for(kLenet, "sequential", 1, 4, 2);
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const BatchSampler sampler = graph_sampler(data, graph, request.network, 7);
  RecordedRuns recorded;
  const Runner twins = with_unmarked_twins(recording_into(recorded));
  TrainingOptions marked;
  marked.record_layer_times = true;
  const TrainingRun run = twins(graph, request.network, sampler, marked);
  REQUIRE(recorded.size() == 2);
  const TrainingRun& first = recorded[0].second;
  const TrainingRun& twin = recorded[1].second;
  CHECK_FALSE(first.layer_times.empty());
  CHECK(twin.layer_times.empty());  // the twin has no marks
  CHECK(run.layer_times.size() == first.layer_times.size());
  // The same training twice: the same weights, bit for bit.
  CHECK(test::max_relative_difference(twin.final_weights, first.final_weights) == 0);
  // Its task times are the twin's.
  REQUIRE(run.unmarked_tasks.size() == graph.tasks.size());
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    CHECK(run.unmarked_tasks[i].start_cycles == twin.result.tasks[i].start_cycles);
    CHECK(run.unmarked_tasks[i].end_cycles == twin.result.tasks[i].end_cycles);
  }
  // A task's overhead: its time in the twin less its layers' own times in the marked run.
  std::map<std::int32_t, double> layers_s;
  for (const auto& time : first.layer_times) {
    if (time.kind == graph.tasks[static_cast<std::size_t>(time.task)].kind) layers_s[time.task] += time.seconds;
  }
  const std::vector<TaskOverhead> overheads = task_overheads(graph, {run}, 0);
  REQUIRE(overheads.size() == layers_s.size());
  for (const auto& o : overheads) {
    const TaskTiming& t = twin.result.tasks[static_cast<std::size_t>(o.task)];
    const double twin_s = static_cast<double>(t.end_cycles - t.start_cycles) / graph.clock_hz;
    CHECK(o.seconds == doctest::Approx(twin_s - layers_s.at(o.task)).epsilon(1e-12));
  }
  // A run without layer times is made once, with no twin.
  recorded.clear();
  CHECK(twins(graph, request.network, sampler, TrainingOptions{}).unmarked_tasks.empty());
  CHECK(recorded.size() == 1);
  // A profile made so says it.
  const Calibration table = cpu::profile_cpu(config_for(kLenet, "sequential", 1, 2, 1), data, 2, 7, {}, 1, {},
                                             kAutomaticHandoffSpin, cpu::ConcurrentTiming::pipeline,
                                             TransferThreads::automatic, /*unmarked_twins=*/true);
  CHECK(table.overheads_from_unmarked_twins);
  CHECK(table.task_overhead_s >= 0);
  // Which tables take twins: auto, a GPU's one-processor table only.
  CHECK(takes_unmarked_twins("auto", /*on_gpu=*/true, 1));
  CHECK_FALSE(takes_unmarked_twins("auto", true, 8));
  CHECK_FALSE(takes_unmarked_twins("auto", /*on_gpu=*/false, 1));
  CHECK(takes_unmarked_twins("all", false, 2));
  CHECK_FALSE(takes_unmarked_twins("none", true, 1));
  CHECK_THROWS_WITH_AS(takes_unmarked_twins("yes", true, 1), doctest::Contains("auto, all or none"), Error);
}

TEST_CASE("a one-processor profile measures what a larger footprint costs in a gpipe run, or goes without") {
  // lenet5, 4 microbatches of 4 samples: one-processor gpipe holds every microbatch's stash,
  // sequential one at a time.
  const Case lenet{"lenet5", {"batch=16"}};
  const Dataset data = data_for(lenet);
  const GraphConfig config = config_for(lenet, "sequential", 1, 4, 3);
  const auto predicted_of = [&](const std::string& schedule) {
    return evaluate(make_graph(config_for(lenet, schedule, 1, 4, 3)));
  };
  const auto sum = [](const std::vector<std::int64_t>& bytes) {
    std::int64_t total = 0;
    for (const std::int64_t b : bytes) total += b;
    return total;
  };
  const std::int64_t sequential_bytes = sum(predicted_of("sequential").step_compute_peak_memory_bytes);
  const std::int64_t gpipe_bytes = sum(predicted_of("gpipe").step_compute_peak_memory_bytes);
  REQUIRE(gpipe_bytes > sequential_bytes);
  RecordedRuns recorded;
  const Runner recording = recording_into(recorded);
  const Calibration table = profile_layers(config, data, 4, 7, recording, {}, 1, {}, /*time_footprint=*/true);
  REQUIRE(recorded.size() == 4);  // sequential, gpipe, the one-layer layerpipe run, the zb-h1 run
  REQUIRE(recorded[1].first.schedule == "gpipe");
  // The footprints are the runs' step peaks of what their forwards and backwards held, which are
  // the memory model's (the executor holds what the graph declares).
  CHECK(table.timed_footprint_bytes == sequential_bytes);
  CHECK(table.footprint_small_bytes == sequential_bytes);
  CHECK(table.footprint_large_bytes == gpipe_bytes);
  // A fraction >= 0, within what the slowest gpipe minibatch took over the quickest sequential one.
  const auto minibatch_cycles = [](const std::pair<TaskGraph, TrainingRun>& r) {
    std::map<std::int32_t, double> cycles;
    for (const Task& t : r.first.tasks) {
      if (t.minibatch < r.first.minibatches / 2 || (t.kind != TaskKind::F && t.kind != TaskKind::B)) continue;
      const TaskTiming& timing = r.second.result.tasks[static_cast<std::size_t>(t.id)];
      cycles[t.minibatch] += static_cast<double>(timing.end_cycles - timing.start_cycles);
    }
    std::vector<double> out;
    for (const auto& [minibatch, c] : cycles) out.push_back(c);
    return out;
  };
  const std::vector<double> sequential_cycles = minibatch_cycles(recorded[0]), gpipe_cycles = minibatch_cycles(recorded[1]);
  REQUIRE_FALSE(sequential_cycles.empty());
  CHECK(table.footprint_slowdown >= 0);
  CHECK(table.footprint_slowdown <= std::max(0.0, *std::max_element(gpipe_cycles.begin(), gpipe_cycles.end()) /
                                                      *std::min_element(sequential_cycles.begin(), sequential_cycles.end()) - 1));
  // A processor too small for every stash at once: the table goes without the figure, the profile on.
  const std::int64_t between = (sum(predicted_of("gpipe").peak_memory_bytes) + sum(predicted_of("sequential").peak_memory_bytes)) / 2;
  REQUIRE(sum(predicted_of("layerpipe").peak_memory_bytes) < between);
  const GraphConfig small = config_for(lenet, "sequential", 1, 4, 3, {"memory_bytes=" + std::to_string(between)});
  recorded.clear();
  std::vector<std::string> said;
  const Calibration without = profile_layers(small, data, 4, 7, recording, [&](const std::string& m) { said.push_back(m); }, 1, {}, true);
  CHECK(recorded.size() == 3);  // the gpipe run refused
  CHECK(without.footprint_slowdown == -1);
  CHECK(without.timed_footprint_bytes == sequential_bytes);
  CHECK(std::any_of(said.begin(), said.end(), [](const std::string& m) { return m.rfind("no footprint figure", 0) == 0; }));
}

TEST_CASE("a profile given a reuse curve keeps it and what the model charged its timed run's layers") {
  // lenet5, 4 microbatches of 4 samples, a curve rising to 1 ns a byte at 1 MiB: each layer's
  // figures are the mean prices of its touches in the sequential run after the warm-up.
  const Case lenet{"lenet5", {"batch=16"}};
  const Dataset data = data_for(lenet);
  const GraphConfig config = config_for(lenet, "sequential", 1, 4, 3);
  const Network network = make_request(config).network;
  const std::vector<std::pair<std::int64_t, double>> curve = {{1000, 0.0}, {std::int64_t{1} << 20, 1e-9}};
  RecordedRuns recorded;
  const Runner recording = recording_into(recorded);
  const Calibration table = profile_layers(config, data, 4, 7, recording, {}, 1, {}, /*time_footprint=*/true, curve);
  REQUIRE(recorded.size() >= 3);
  REQUIRE(recorded[0].first.schedule == "sequential");
  CHECK(table.reuse_extra_s_per_byte == curve);
  const std::vector<LayerReuseSeconds> means =
      mean_reuse_seconds(recorded[0].first, network, table, recorded[0].first.minibatches / 2);  // its first half warms up
  int priced = 0;
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(network.layers[l].name);
    const LayerTimes& times = table.layers.at(network.layers[l].name);
    CHECK(times.forward_weights_reuse_s == doctest::Approx(means[l].forward_weights_s));
    CHECK(times.backward_gradient_reuse_s == doctest::Approx(means[l].backward_gradient_s));
    if (network.layers[l].param_bytes > 0) {
      CHECK(times.forward_weights_reuse_s > 0);
      ++priced;
    } else {
      CHECK(times.forward_weights_reuse_s == -1);  // no parameters, nothing touched
    }
  }
  CHECK(priced >= 4);
  // Without a curve, none.
  recorded.clear();
  const Calibration without = profile_layers(config, data, 4, 7, recording, {}, 1);
  CHECK(without.reuse_extra_s_per_byte.empty());
  for (const auto& [name, times] : without.layers) CHECK(times.forward_weights_reuse_s == -1);
}

TEST_CASE("a profile takes the way back to the linear output taken again from its one-layer run") {
  // The second run a one-processor profile makes is LayerPipe's, a task per layer: each layer's
  // BA parts after the first and its BW follow another task of their layer and microbatch. The
  // table's way back taken again, per kind, is a mean of what those tasks spent going back (in
  // the run's second half, after its two warm-up minibatches): within their range. The first layer has no BA, so its BW follows
  // another layer's update: never warm, not measured.
  const OneLayerProfile profile = profile_with_one_layer_run();
  const Calibration& table = profile.table;
  const TaskGraph& one_layer = profile.one_layer;
  const Network& network = profile.network;
  REQUIRE(one_layer.minibatches == 4);
  std::vector<std::map<TaskKind, std::vector<double>>> again(network.size());
  for (const LayerTime& time : profile.run.layer_times) {
    const Task& t = one_layer.tasks[static_cast<std::size_t>(time.task)];
    if (t.minibatch < one_layer.minibatches / 2 || time.kind != t.kind || time.layer == kGradientAssemblyLayer) continue;
    if ((t.kind == TaskKind::BA && t.part > 0) || (t.kind == TaskKind::BW && t.first_layer > 0)) {
      again[static_cast<std::size_t>(time.layer)][t.kind].push_back(time.to_linear_s);
    }
  }
  for (std::size_t l = 0; l < network.size(); ++l) {
    for (const TaskKind kind : {TaskKind::BA, TaskKind::BW}) {
      CAPTURE(l);
      CAPTURE(to_string(kind));
      const double measured = table.layers.at(network.layers[l].name).to_linear_again_s(kind);
      if (l == 0) {
        CHECK(again[l].count(kind) == 0);
        CHECK(measured == -1);
        continue;
      }
      REQUIRE(again[l].at(kind).size() == 2 * 2);  // 2 minibatches x 2 microbatches after the warm-up
      const auto [low, high] = std::minmax_element(again[l].at(kind).begin(), again[l].at(kind).end());
      CHECK(measured >= *low);
      CHECK(measured <= *high);
    }
  }
}

TEST_CASE("a one-processor profile times forwards alone in their task and a BA part's first way back in its one-layer run") {
  // lenet5 on one processor, LayerPipe's one-layer run: every forward is one layer's; each layer's
  // BA part 0 follows another layer's task, part 1 follows part 0 (it goes back again). Per layer,
  // the median of block means after the warm-up minibatches, computed here again: of the
  // forwards' layer times, the table's forward_one_layer_s (the profile had no reuse curve, so
  // nothing is taken off for the weights' reuse; the sequential run's forward_s is another
  // figure), and of part 0's way back, its activation_grad_to_linear_one_layer_s (the first
  // layer has no BA).
  const OneLayerProfile profile = profile_with_one_layer_run();
  const TaskGraph& one_layer = profile.one_layer;
  const Network& network = profile.network;
  REQUIRE(one_layer.samples_per_microbatch == profile.table.samples);
  std::vector<std::vector<double>> forward_s(network.size()), first_s(network.size());
  for (const LayerTime& time : profile.run.layer_times) {
    const Task& t = one_layer.tasks[static_cast<std::size_t>(time.task)];
    if (t.minibatch < one_layer.minibatches / 2 || time.kind != t.kind || time.layer < 0) continue;
    REQUIRE(t.first_layer == t.last_layer);
    if (t.kind == TaskKind::F) forward_s[static_cast<std::size_t>(time.layer)].push_back(time.seconds);
    if (t.kind == TaskKind::BA && t.part == 0) first_s[static_cast<std::size_t>(time.layer)].push_back(time.to_linear_s);
  }
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    const LayerTimes& times = profile.table.layers.at(network.layers[l].name);
    REQUIRE(forward_s[l].size() == 2 * 2);  // 2 minibatches x 2 microbatches after the warm-up
    CHECK(times.forward_one_layer_s == doctest::Approx(median_of_block_means(forward_s[l])).epsilon(1e-12));
    CHECK(times.forward_one_layer_s != times.forward_s);
    if (l == 0) {
      CHECK(first_s[l].empty());
      CHECK(times.activation_grad_to_linear_one_layer_s == -1);
      continue;
    }
    REQUIRE(first_s[l].size() == 2 * 2);
    CHECK(times.activation_grad_to_linear_one_layer_s == doctest::Approx(median_of_block_means(first_s[l])).epsilon(1e-12));
  }
}

// A run of `graph` (on 2 processors) with made-up task times and no layer times: processor 0's
// tasks 1000 cycles each, back to back, processor 1's 700, so their shares of overlap vary.
TrainingRun run_with_made_up_task_times(const TaskGraph& graph) {
  TrainingRun run;
  run.result.tasks.resize(graph.tasks.size());
  std::vector<std::int64_t> next_start(2, 0);
  std::vector<const Task*> in_order;
  for (const Task& t : graph.tasks) {
    if (t.placement == Placement::processor) in_order.push_back(&t);
  }
  std::sort(in_order.begin(), in_order.end(), [](const Task* a, const Task* b) {
    return std::tie(a->resource, a->order) < std::tie(b->resource, b->order);
  });
  for (const Task* t : in_order) {
    const std::int64_t length = t->resource == 0 ? 1000 : 700;
    TaskTiming& timing = run.result.tasks[static_cast<std::size_t>(t->id)];
    timing.start_cycles = next_start[static_cast<std::size_t>(t->resource)];
    timing.end_cycles = timing.start_cycles + length;
    next_start[static_cast<std::size_t>(t->resource)] = timing.end_cycles;
  }
  return run;
}

// lenet5's layerpipe graph on 2 processors, a run of it with made-up task times
// (run_with_made_up_task_times), and the co-run slope s and share o the tests' tables take.
struct MadeUpOneLayerRun {
  GraphConfig config = config_for(kLenet, "layerpipe", 2, 2, 4);
  TaskGraph graph = make_graph(config);
  Network network = make_request(config).network;
  std::int32_t skip = 2;
  TrainingRun run = run_with_made_up_task_times(graph);
  double s = 0.5, o = 0.4;

  // Gives the run a layer time for each one-layer task of `kind` after `skip` minibatches:
  // `way_back_s(l)` back to the linear output, then `past_way_back_s(l, x)`, x its task's share of
  // overlap. Per layer, the latter, as given.
  std::vector<std::vector<double>> add_one_layer_times(TaskKind kind, const std::function<double(int, double)>& past_way_back_s,
                                                       const std::function<double(int)>& way_back_s) {
    const std::vector<double> shares = other_busy_shares(graph, run.result);
    std::vector<std::vector<double>> past_s(network.size());
    std::set<double> distinct_shares;
    for (const Task& t : graph.tasks) {
      if (t.kind != kind || t.first_layer != t.last_layer || t.minibatch < skip) continue;
      const double x = shares[static_cast<std::size_t>(t.id)];
      distinct_shares.insert(x);
      const double back_s = way_back_s(t.first_layer), past = past_way_back_s(t.first_layer, x);
      run.layer_times.push_back({t.id, t.first_layer, kind, back_s + past, back_s});
      past_s[static_cast<std::size_t>(t.first_layer)].push_back(past);
    }
    REQUIRE(distinct_shares.size() > 1);  // the tests would not tell the shares apart otherwise
    return past_s;
  }
  // `table` with the co-run figures s and o.
  Calibration with_co_run(Calibration table) const {
    table.co_run_slope = s;
    table.co_run_share = o;
    return table;
  }
};

TEST_CASE("a forward alone in its task is taken to the overlap its table was timed at") {
  // lenet5's layerpipe graph on 2 processors, its task times made up so that their shares of
  // overlap x vary. Each one-layer forward of layer l after the warm-up took a_l (1 + s x)
  // seconds, a_l = (1 + l) ms: with the
  // table's co-run slope s = 0.5 and share o = 0.4 every one of them is taken to a_l (1 + s o), so
  // that is the layer's figure (no weight-reuse term: the table has none). With no co-run figures
  // the times are kept as they are: their median of block means, computed here again.
  MadeUpOneLayerRun made_up;
  const auto& [config, graph, network, skip, run, s, o] = made_up;
  const std::vector<std::vector<double>> raw_s = made_up.add_one_layer_times(
      TaskKind::F, [&](int l, double x) { return 1e-3 * (1 + l) * (1 + s * x); }, [](int) { return 0.0; });
  Calibration table;
  table.samples = graph.samples_per_microbatch;
  for (const Layer& layer : network.layers) table.layers[layer.name].forward_s = 1e-3;
  Calibration with_co_run = made_up.with_co_run(table);
  record_one_layer_forwards(graph, network, {run}, skip, with_co_run);
  record_one_layer_forwards(graph, network, {run}, skip, table);
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    REQUIRE(!raw_s[l].empty());
    const double a = 1e-3 * static_cast<double>(1 + l);
    CHECK(with_co_run.layers.at(network.layers[l].name).forward_one_layer_s == doctest::Approx(a * (1 + s * o)).epsilon(1e-12));
    CHECK(table.layers.at(network.layers[l].name).forward_one_layer_s ==
          doctest::Approx(median_of_block_means(raw_s[l])).epsilon(1e-12));
  }
}

TEST_CASE("a BW alone in its task: its dW past the way back, taken to its table's overlap, where the table has a fused B") {
  // The same made-up run as above. Each one-layer BW of layer l after the warm-up went back to the
  // linear output in w_l = 0.1 (1 + l) ms and then took d_l (1 + s x), d_l = (2 + l) ms, for its dW:
  // with s = 0.5 and o = 0.4 the layer's figure is d_l (1 + s o), the way back left out; without
  // co-run figures, the median of block means of the dW parts, computed here again. A layer whose
  // table has no fused B gets none. The first layer, whose table has no BA to tell the way back
  // by, gets its whole BW, way back included: (w_0 + d_0 (1 + s x)) (1 + s o) / (1 + s x) per task
  // with the co-run figures, w_0 + d_0 (1 + s x) without, each the median of block means of those.
  MadeUpOneLayerRun made_up;
  const auto& [config, graph, network, skip, run, s, o] = made_up;
  const std::vector<std::vector<double>> raw_dw_s = made_up.add_one_layer_times(
      TaskKind::BW, [&](int l, double x) { return 1e-3 * (2 + l) * (1 + s * x); }, [](int l) { return 1e-4 * (1 + l); });
  const std::size_t without_b = 1;
  Calibration table;
  table.samples = graph.samples_per_microbatch;
  for (const Layer& layer : network.layers) table.layers[layer.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
  table.layers[network.layers[without_b].name].backward_s = -1;
  table.layers[network.layers[0].name].activation_grad_s = 0;  // as the profile times it: no BA
  Calibration with_co_run = made_up.with_co_run(table);
  record_one_layer_weight_grads(graph, network, {run}, skip, with_co_run);
  record_one_layer_weight_grads(graph, network, {run}, skip, table);
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    REQUIRE(!raw_dw_s[l].empty());
    const LayerTimes& plain = table.layers.at(network.layers[l].name);
    const LayerTimes& co_run = with_co_run.layers.at(network.layers[l].name);
    CHECK(plain.forward_one_layer_s == -1);  // forwards are another record's
    if (l == without_b) {
      CHECK(plain.weight_grad_dw_one_layer_s == -1);
      CHECK(co_run.weight_grad_dw_one_layer_s == -1);
      continue;
    }
    if (l == 0) {
      const double w = 1e-4;
      const std::vector<double> shares = other_busy_shares(graph, run.result);
      std::vector<double> whole_s, whole_at_table_s;  // in the run's order of the first layer's BWs
      for (const Task& t : graph.tasks) {
        if (t.kind != TaskKind::BW || t.first_layer != 0 || t.last_layer != 0 || t.minibatch < skip) continue;
        const double x = shares[static_cast<std::size_t>(t.id)];
        const double whole = w + 2e-3 * (1 + s * x);
        whole_s.push_back(whole);
        whole_at_table_s.push_back(whole * (1 + s * o) / (1 + s * x));
      }
      REQUIRE(whole_s.size() == raw_dw_s[0].size());
      CHECK(plain.weight_grad_dw_one_layer_s == doctest::Approx(median_of_block_means(whole_s)).epsilon(1e-12));
      CHECK(co_run.weight_grad_dw_one_layer_s == doctest::Approx(median_of_block_means(whole_at_table_s)).epsilon(1e-12));
      CHECK(plain.weight_grad_dw_one_layer_s > median_of_block_means(raw_dw_s[0]) + 0.5 * w);  // the way back is in it
      continue;
    }
    const double d = 1e-3 * static_cast<double>(2 + l);
    CHECK(co_run.weight_grad_dw_one_layer_s == doctest::Approx(d * (1 + s * o)).epsilon(1e-12));
    CHECK(plain.weight_grad_dw_one_layer_s == doctest::Approx(median_of_block_means(raw_dw_s[l])).epsilon(1e-12));
  }
}

TEST_CASE("a BA of one layer in parts: the parts' dx at the table's overlap, where it meets no samples, and at the table's") {
  // The same made-up run. Each BA part (n = S / 2 samples) of layer l after the warm-up went back
  // to the linear output in 0.1 ms and then took d_l (1 + s x) for its dx. Every layer's table:
  // BA 2 ms, BW 3 ms, B 4 ms, so 1 ms back to the linear output and a whole dx of 1 ms at S. With
  // s = 0.5 and o = 0.4 the parts' dx is p = 1.2 d_l; the line through (n, p) and (S, 1 ms) meets
  // no samples at 2 p - 1 ms, clamped to [0, p] (BA_fixed_s), and the line through (n, p) with
  // that intercept reaches, at S, BA_dx_one_layer_s:
  //   d = 0.3 ms: p = 0.36, intercept -0.28 -> 0, dx at S 0.72 ms (under the table's 1 ms);
  //   d = 0.7 ms: p = 0.84, intercept 0.68, dx at S 1 ms (both lines are one);
  //   d = 1.2 ms: p = 1.44, intercept 1.88 -> 1.44, dx at S 1.44 ms.
  // Without co-run figures, p is the parts' median of block means, computed here again. A layer
  // whose table has no fused B gets neither; the first layer has no BA.
  MadeUpOneLayerRun made_up;
  const auto& [config, graph, network, skip, run, s, o] = made_up;
  REQUIRE(graph.samples_per_microbatch % 2 == 0);
  const std::vector<double> d_s = {0.3e-3, 0.7e-3, 1.2e-3};
  const auto d_of = [&](int l) { return d_s[static_cast<std::size_t>(l) % d_s.size()]; };
  const std::vector<std::vector<double>> raw_dx_s = made_up.add_one_layer_times(
      TaskKind::BA, [&](int l, double x) { return d_of(l) * (1 + s * x); }, [](int) { return 1e-4; });
  const std::size_t without_b = 2;
  Calibration table;
  table.samples = graph.samples_per_microbatch;
  for (const Layer& layer : network.layers) table.layers[layer.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
  table.layers[network.layers[without_b].name].backward_s = -1;
  Calibration with_co_run = made_up.with_co_run(table);
  record_one_layer_activation_grads(graph, network, {run}, skip, with_co_run);
  record_one_layer_activation_grads(graph, network, {run}, skip, table);
  const std::map<double, std::pair<double, double>> expected_co_run = {  // d -> (intercept, dx at S)
      {0.3e-3, {0.0, 0.72e-3}}, {0.7e-3, {0.68e-3, 1e-3}}, {1.2e-3, {1.44e-3, 1.44e-3}}};
  int measured_layers = 0;
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    const LayerTimes& plain = table.layers.at(network.layers[l].name);
    const LayerTimes& co_run = with_co_run.layers.at(network.layers[l].name);
    if (l == without_b || l == 0) {
      CHECK(raw_dx_s[l].empty() == (l == 0));
      for (const LayerTimes* times : {&plain, &co_run}) {
        CHECK(times->activation_grad_fixed_s == -1);
        CHECK(times->activation_grad_dx_one_layer_s == -1);
      }
      continue;
    }
    REQUIRE(!raw_dx_s[l].empty());
    const auto& [intercept, dx] = expected_co_run.at(d_of(static_cast<int>(l)));
    CHECK(co_run.activation_grad_fixed_s == doctest::Approx(intercept).epsilon(1e-9));
    CHECK(co_run.activation_grad_dx_one_layer_s == doctest::Approx(dx).epsilon(1e-9));
    const double p = median_of_block_means(raw_dx_s[l]);
    const double plain_intercept = std::clamp(2 * p - 1e-3, 0.0, p);
    CHECK(plain.activation_grad_fixed_s == doctest::Approx(plain_intercept).epsilon(1e-9));
    CHECK(plain.activation_grad_dx_one_layer_s == doctest::Approx(plain_intercept + 2 * (p - plain_intercept)).epsilon(1e-9));
    ++measured_layers;
  }
  CHECK(measured_layers == static_cast<int>(network.size()) - 2);
}

TEST_CASE("a profile's one-layer run gives what a BA part costs whatever its samples") {
  // lenet5, 2 microbatches of S = 2 samples: the one-layer (layerpipe) run splits each BA into 2
  // parts of S / 2. Per layer, the line through the parts' dx (seconds past the way back to the
  // linear output) at S / 2 samples and the whole BA's in the table at S, where it meets 0
  // samples, clamped to [0, the parts' dx], and the line through that and the parts' dx, at S
  // (the dx of one-layer parts; a one-processor table without a reuse curve or co-run figures
  // takes the parts' times as they are): computed here again from the run's records.
  const OneLayerProfile profile = profile_with_one_layer_run();
  const Calibration& table = profile.table;
  const TaskGraph& one_layer = profile.one_layer;
  const Network& network = profile.network;
  REQUIRE(one_layer.samples_per_microbatch == table.samples);
  std::vector<std::vector<double>> part_dx(network.size());
  for (const LayerTime& time : profile.run.layer_times) {
    const Task& t = one_layer.tasks[static_cast<std::size_t>(time.task)];
    if (t.minibatch < one_layer.minibatches / 2 || t.kind != TaskKind::BA || time.kind != TaskKind::BA ||
        time.layer == kGradientAssemblyLayer) {
      continue;
    }
    REQUIRE(t.parts == 2);
    part_dx[static_cast<std::size_t>(time.layer)].push_back(std::max(0.0, time.seconds - time.to_linear_s));
  }
  int measured_layers = 0;
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    const LayerTimes& times = table.layers.at(network.layers[l].name);
    if (part_dx[l].empty()) {  // the first layer: no BA
      CHECK(times.activation_grad_fixed_s == -1);
      CHECK(times.activation_grad_dx_one_layer_s == -1);
      continue;
    }
    REQUIRE(part_dx[l].size() == 2 * 2 * 2);  // 2 minibatches x 2 microbatches x 2 parts after the warm-up
    const double part = median_of_block_means(part_dx[l]);
    const double whole = times.activation_grad_s - times.to_linear_s();
    const double S = static_cast<double>(table.samples), s = S / 2;
    const double expected = std::clamp((part * S - whole * s) / (S - s), 0.0, part);
    CHECK(times.activation_grad_fixed_s == doctest::Approx(expected).epsilon(1e-9));
    CHECK(times.activation_grad_dx_one_layer_s == doctest::Approx(expected + (part - expected) * S / s).epsilon(1e-9));
    ++measured_layers;
  }
  CHECK(measured_layers == static_cast<int>(network.size()) - 1);
}

TEST_CASE("a profile's one-layer run gives each layer's assembly of the gradient at its output") {
  // lenet5 on one processor, LayerPipe's one-layer run: per layer but the last, the first of its
  // backwards on the processor assembles the gradient at its output from the next layer's two BA
  // parts, timed apart (layer kGradientAssemblyLayer). The table's assembly_s: the median of
  // block means of those times after the warm-up minibatches, computed here again; the tasks'
  // overhead leaves it out (it is the assembling tasks' own, as their layers are).
  const OneLayerProfile profile = profile_with_one_layer_run();
  const TaskGraph& one_layer = profile.one_layer;
  const Network& network = profile.network;
  REQUIRE(one_layer.samples_per_microbatch == profile.table.samples);
  std::vector<std::vector<double>> assembly_s(network.size());
  std::map<std::int32_t, int> per_task;
  for (const LayerTime& time : profile.run.layer_times) {
    if (time.layer != kGradientAssemblyLayer) continue;
    const Task& t = one_layer.tasks[static_cast<std::size_t>(time.task)];
    CHECK(time.kind == t.kind);
    CHECK((t.kind == TaskKind::BA || t.kind == TaskKind::BW));
    ++per_task[t.id];
    if (t.minibatch >= one_layer.minibatches / 2) assembly_s[static_cast<std::size_t>(t.last_layer)].push_back(time.seconds);
  }
  for (const auto& [task, records] : per_task) CHECK(records == 1);
  // Exactly the tasks the cost model charges for it (gradient_assemblies).
  const GradientAssemblies rule = gradient_assemblies(one_layer, static_cast<std::int32_t>(network.size()));
  std::size_t flagged = 0;
  for (const auto& t : one_layer.tasks) {
    flagged += rule.assembles[static_cast<std::size_t>(t.id)] ? 1 : 0;
    CHECK(rule.assembles[static_cast<std::size_t>(t.id)] == (per_task.count(t.id) == 1));
  }
  CHECK(flagged == per_task.size());
  for (std::size_t l = 0; l < network.size(); ++l) {
    CAPTURE(l);
    const LayerTimes& times = profile.table.layers.at(network.layers[l].name);
    if (l + 1 == network.size()) {  // the loss makes the last layer's gradient whole
      CHECK(assembly_s[l].empty());
      CHECK(times.assembly_s == -1);
      continue;
    }
    REQUIRE(assembly_s[l].size() == 2 * 2);  // 2 minibatches x 2 microbatches after the warm-up, one each
    CHECK(times.assembly_s == doctest::Approx(median_of_block_means(assembly_s[l])).epsilon(1e-9));
  }
}

TEST_CASE("the copy times of a table for P processors are timed with P copies at once") {
  // Speed is the benchmarks' to judge (experiments/); here only that every copier reports and
  // that a nonsense count or size is refused.
  for (const int concurrent : {1, 2, 3}) {
    const double seconds = cpu::measure_copy_seconds(std::int64_t{8} << 20, 1, concurrent);
    CHECK(std::isfinite(seconds));
    CHECK(seconds > 0);
  }
  CHECK_THROWS_WITH_AS(cpu::measure_copy_seconds(std::int64_t{8} << 20, 1, 0), "profile: concurrent copies must be at least 1", Error);
  CHECK_THROWS_WITH_AS(cpu::measure_copy_seconds(2, 1, 1), "profile: a copy of at least one float", Error);
}

}  // namespace pipetwin
