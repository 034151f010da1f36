// Inputs beyond what the engines count exactly are clear errors, never wrapped integers, hangs or
// false deadlocks: layer sizes, minibatch bytes, task costs and their sum.
#include <doctest/doctest.h>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/layer.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/sim/simulator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig with(const std::string& model, std::vector<std::string> params) {
  GraphConfig config = test::graph_config(model, "1f1b", "h100", 2, 2, 1);
  config.params = std::move(params);
  return config;
}

// Two processors, one task each, with the given costs.
TaskGraph two_tasks(std::int64_t first_cycles, std::int64_t second_cycles) {
  GraphConfig config = test::uniform_config("gpipe", 2, 2, 1, 1);
  TaskGraph g = make_graph(config);
  g.tasks.resize(2);
  g.tasks[0] = Task{};
  g.tasks[1] = Task{};
  g.tasks[1].id = 1;
  g.tasks[1].resource = 1;
  g.tasks[0].cost_cycles = first_cycles;
  g.tasks[1].cost_cycles = second_cycles;
  g.links.clear();
  g.buffers.clear();
  return g;
}

}  // namespace

TEST_CASE("sizes and costs beyond 64-bit counting are clear errors") {
  // 4e9 x 4e9 weights (once -1.1e18 bytes of peak memory).
  CHECK_THROWS_WITH_AS(make_graph(with("mlp", {"widths=4000000000,4000000000,10"})),
                       doctest::Contains("beyond the 2^50 that pipetwin counts"), Error);
  // 2^62 output channels (once 1.61 MiB).
  Conv2dSpec conv;
  conv.out_channels = std::int64_t{1} << 62;
  conv.kernel = 3;
  CHECK_THROWS_WITH_AS(conv2d_layer("c", {1, 28, 28}, conv, 4), doctest::Contains("beyond the 2^50"), Error);
  CHECK_THROWS_WITH_AS(make_graph(with("resnet20", {"batch=100000000000"})),
                       doctest::Contains("a minibatch of 100000000000 samples needs"), Error);
  CHECK_THROWS_WITH_AS(make_graph(with("lenet5", {"dtype_bytes=1000000"})), doctest::Contains("dtype_bytes must be between"),
                       Error);
  // A task overhead of 2^32 s on a GHz clock (once a simulation that never ended).
  CHECK_THROWS_WITH_AS(make_graph(with("resnet20", {"task_overhead_s=4294967296"})),
                       doctest::Contains("beyond what pipetwin counts"), Error);
}

TEST_CASE("graphs whose costs add up beyond 2^50 cycles are refused by every engine, not run") {
  const std::int64_t half = kMaxTotalCycles / 2 + 1;
  const TaskGraph fits = two_tasks(half, half - 2);
  CHECK(structural_problems(fits).empty());
  CHECK(evaluate_times(fits)[1].end_cycles == half - 2);
  const TaskGraph too_long = two_tasks(half, half);
  REQUIRE(structural_problems(too_long).size() == 1);
  CHECK(structural_problems(too_long).front().find("add up to more than 2^50 cycles") != std::string::npos);
  CHECK_THROWS_WITH_AS(evaluate_times(too_long), doctest::Contains("cannot evaluate"), Error);
  CHECK_THROWS_WITH_AS(simulate_times(too_long), doctest::Contains("cannot simulate"), Error);
  const TaskGraph negative = two_tasks(5, -1);
  CHECK_FALSE(structural_problems(negative).empty());
  CHECK(bounds_problem(negative).find("negative cost") != std::string::npos);
}

TEST_CASE("runs are bounded in microbatches, processors and layers, with errors that say so") {
  GraphConfig many = test::graph_config("mlp", "gpipe", "unit", 2, 1000000, 2);
  many.params = {"batch=1000000"};
  CHECK_THROWS_WITH_AS(make_graph(many), doctest::Contains("more than the 1048576 microbatches a run may stream"), Error);
  GraphConfig wide = test::graph_config("mlp", "gpipe", "unit", 5000, 1, 1);
  CHECK_THROWS_WITH_AS(make_graph(wide), doctest::Contains("at most 4096 processors"), Error);
  CHECK_THROWS_WITH_AS(make_network("gpt", Params::parse({"layers=20000"})), doctest::Contains("more than 10000 layers"),
                       Error);
  // Refused at the 10001st layer, not after building them all (minutes and gigabytes for this one).
  CHECK_THROWS_WITH_AS(make_network("gpt", Params::parse({"layers=100000000"})),
                       doctest::Contains("more than 10000 layers"), Error);
}
