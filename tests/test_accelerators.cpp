// The simulator's module hierarchy and its accelerator models: the systolic array's fold cycles
// against SCALE-Sim's (an independent implementation), the systolic module computing task cycles
// from the layers during the simulation, a plug-in model registered by name, each run at time zero
// at the hardware's clock period, and SystemC's VCD trace.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/systolic_array.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/sim/accelerator.hpp"
#include "pipetwin/sim/simulator.hpp"
#include "schedule_test_helpers.hpp"
#include "temporary_folder.hpp"

using namespace pipetwin;

namespace {

SystolicSpec array(std::int64_t rows, std::int64_t cols, Dataflow dataflow) {
  SystolicSpec spec;
  spec.rows = rows;
  spec.cols = cols;
  spec.dataflow = dataflow;
  return spec;
}

// A model that records what it sees and takes `factor` x the graph's cycles.
struct Seen {
  std::vector<std::string> names;
  std::vector<double> start_seconds;  // SystemC's time at each task's start
  std::vector<std::int32_t> tasks;
};

class ScaledAccelerator final : public sim::AcceleratorModel {
 public:
  ScaledAccelerator(const sc_core::sc_module_name& name, const sim::AcceleratorSetup& setup, Seen& seen)
      : AcceleratorModel(name), seen_(seen), factor_(std::stoll(setup.settings.at("factor"))) {
    seen_.names.push_back(std::string(this->name()) + " in " + get_parent_object()->kind());
  }
  std::int64_t task_cycles(const Task& task) override {
    seen_.start_seconds.push_back(sc_core::sc_time_stamp().to_seconds());
    seen_.tasks.push_back(task.id);
    return task.cost_cycles * factor_;
  }

 private:
  Seen& seen_;
  std::int64_t factor_;
};

// Start and end of every task, for comparing two runs.
std::vector<std::int64_t> flat(const std::vector<TaskTiming>& times) {
  std::vector<std::int64_t> out;
  for (const auto& t : times) {
    out.push_back(t.start_cycles);
    out.push_back(t.end_cycles);
  }
  return out;
}

TaskGraph chain_graph(double clock_hz, std::int64_t cost) {
  TaskGraph g;
  g.schedule = "handmade";
  g.model = "none";
  g.hardware = "none";
  g.clock_hz = clock_hz;
  g.processors = {{"p0", 1000, 0}, {"p1", 1000, 0}};
  for (std::int32_t i = 0; i < 4; ++i) {
    Task t;
    t.id = i;
    t.resource = i % 2;
    t.order = i / 2;
    t.cost_cycles = cost;
    if (i > 0) t.deps.push_back({i - 1, Carries::order, 0});
    g.tasks.push_back(t);
  }
  return g;
}

}  // namespace

TEST_CASE("systolic fold cycles equal SCALE-Sim's for every dataflow") {
  // SCALE-Sim v2 (scalesim 3.0.0): the length of systolic_compute_{os,ws,is}'s demand matrices
  // for operand matrices of these shapes (m x k times k x n) on rows x cols arrays.
  struct Case {
    std::int64_t m, k, n, rows, cols, os, ws, is;
  };
  const Case cases[] = {{5, 3, 4, 2, 2, 30, 36, 48},       {7, 9, 5, 4, 3, 56, 96, 126},
                        {16, 8, 8, 4, 4, 112, 104, 144},    {10, 27, 6, 8, 4, 148, 224, 288},
                        {33, 20, 17, 8, 8, 510, 495, 585}};
  for (const auto& c : cases) {
    CAPTURE(c.m);
    const ArrayGemm gemm{c.m, c.k, c.n};
    CHECK(gemm_compute_cycles(gemm, array(c.rows, c.cols, Dataflow::output_stationary)) == c.os);
    CHECK(gemm_compute_cycles(gemm, array(c.rows, c.cols, Dataflow::weight_stationary)) == c.ws);
    CHECK(gemm_compute_cycles(gemm, array(c.rows, c.cols, Dataflow::input_stationary)) == c.is);
  }
}

TEST_CASE("a layer's GEMMs follow its convolution: forward, activation and weight gradients") {
  Conv2dSpec spec;
  spec.out_channels = 16;
  spec.kernel = 3;
  spec.padding = 1;
  spec.stride = 2;
  const Layer conv = conv2d_layer("c", {8, 10, 10}, spec, 2);
  // Output 5x5 per sample; window 3 x 3 x 8 = 72.
  const auto forward = layer_gemms(conv, TaskKind::F, 4);
  REQUIRE(forward.size() == 1);
  CHECK(forward[0].m == 100);
  CHECK(forward[0].k == 72);
  CHECK(forward[0].n == 16);
  const auto backward = layer_gemms(conv, TaskKind::B, 4);
  REQUIRE(backward.size() == 2);
  CHECK((backward[0].m == 100 && backward[0].k == 16 && backward[0].n == 72));  // dX = dY W^T
  CHECK((backward[1].m == 72 && backward[1].k == 100 && backward[1].n == 16));  // dW = X^T dY
  spec.groups = 4;
  const auto grouped = layer_gemms(conv2d_layer("g", {8, 10, 10}, spec, 2), TaskKind::F, 1);
  REQUIRE(grouped.size() == 4);
  CHECK((grouped[0].k == 18 && grouped[0].n == 4));
  CHECK_THROWS_WITH_AS(systolic_layer_cycles(transformer_block_layer("t", {8, 16}, {}, 2), TaskKind::F, 1, SystolicSpec{}),
                       doctest::Contains("models conv2d and dense layers"), Error);
}

TEST_CASE("the systolic module computes task cycles from the layers during the simulation") {
  GraphConfig config = test::graph_config("lenet5", "1f1b", "systolic", 2, 4, 1);
  const TaskGraph g = make_graph(config);
  CHECK(g.accelerator == "systolic");
  // The cost model prices tasks with the same array, so the fixed-cost evaluation agrees.
  const auto expected = flat(evaluate_times(g));
  CHECK(flat(simulate_times(g)) == expected);
  // The module ignores the graph's costs: scrambling them changes nothing on the array...
  TaskGraph scrambled = g;
  for (auto& t : scrambled.tasks) {
    if (t.placement == Placement::processor) t.cost_cycles = 1;
  }
  CHECK(flat(simulate_times(scrambled)) == expected);
  // ...and everything with the fixed model.
  scrambled.accelerator = "fixed";
  CHECK(flat(simulate_times(scrambled)) != expected);
  // Another dataflow gives other cycles.
  config.params = {"dataflow=ws"};
  CHECK(flat(simulate_times(make_graph(config))) != expected);
}

TEST_CASE("a plug-in accelerator is registered by name, chosen by the graph, and lives in the hierarchy") {
  Seen seen;
  sim::AcceleratorRegistry registry;
  registry.add("scaled", "the graph's cycles times `factor`",
               [&seen](const char* name, const sim::AcceleratorSetup& setup) {
                 return std::make_unique<ScaledAccelerator>(name, setup, seen);
               });
  CHECK_THROWS_WITH_AS(registry.add("scaled", "again", nullptr), "accelerator model 'scaled' has no factory", Error);
  CHECK_THROWS_WITH_AS(registry.add("systolic", "again", [](const char*, const sim::AcceleratorSetup&) {
                         return std::unique_ptr<sim::AcceleratorModel>();
                       }),
                       "accelerator model 'systolic' is registered already", Error);
  TaskGraph g = chain_graph(2e9, 10);  // a 0.5 ns period
  g.accelerator = "scaled";
  g.accelerator_settings = {{"factor", "3"}};
  SimOptions options;
  options.accelerators = &registry;
  const Network none;
  options.network = &none;
  const auto times = simulate_times(g, options);
  REQUIRE(times.size() == 4);
  CHECK(times.back().end_cycles == 4 * 30);
  CHECK(seen.names == std::vector<std::string>{"platform.p0.accelerator in pipetwin::sim::ProcessorModule",
                                               "platform.p1.accelerator in pipetwin::sim::ProcessorModule"});
  // SystemC's clock runs at the hardware's period: task i starts at 30 i cycles = 15 i ns.
  REQUIRE(seen.start_seconds.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(seen.start_seconds[i] == doctest::Approx(15e-9 * static_cast<double>(i)));
  // Without the registry the name is unknown, and the message lists the known ones.
  CHECK_THROWS_WITH_AS(simulate_times(g), doctest::Contains("unknown accelerator model 'scaled'"), Error);
  // A factory that throws (no "factor" setting) ends the run, and the next run is unharmed.
  g.accelerator_settings.clear();
  CHECK_THROWS_AS(simulate_times(g, options), std::out_of_range);
  g.accelerator_settings = {{"factor", "2"}};
  CHECK(simulate_times(g, options).back().end_cycles == 4 * 20);
  // A model's error ends the run with its message.
  g.accelerator_settings = {{"factor", "-1"}};
  CHECK_THROWS_WITH_AS(simulate_times(g, options), doctest::Contains("a task takes 0 to 2^50"), Error);
}

TEST_CASE("every run starts at time zero: four runs of a graph near the clock's range end") {
  // 2^49 cycles per task on a 1 GHz clock (once: runs added up in one kernel, which wrapped).
  const TaskGraph g = chain_graph(1e9, std::int64_t{1} << 48);
  for (int run = 0; run < 4; ++run) {
    const auto times = simulate_times(g);
    CHECK(times.front().start_cycles == 0);
    CHECK(times.back().end_cycles == 4 * (std::int64_t{1} << 48));
  }
}

TEST_CASE("SystemC's VCD trace has each processor's busy signal at the clock period") {
  const test::TemporaryFolder temporary("vcd");
  const std::filesystem::path& folder = temporary.path();
  SimOptions options;
  options.vcd_path = (folder / "run.vcd").string();
  simulate_times(chain_graph(1e9, 7), options);
  std::ifstream in(options.vcd_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string vcd = text.str();
  CHECK(vcd.find("busy") != std::string::npos);
  CHECK(vcd.find("$scope module platform $end") != std::string::npos);
  // The last task ends at cycle 28 = 28 ns; the run's resolution is the finest that holds it, 1 fs.
  CHECK(vcd.find("$timescale\n     1 fs\n$end") != std::string::npos);
  CHECK(vcd.find("#28000000\n") != std::string::npos);
  options.vcd_path = (folder / "missing" / "run.vcd").string();
  CHECK_THROWS_WITH_AS(simulate_times(chain_graph(1e9, 7), options), doctest::Contains("no folder"), Error);
  options.vcd_path = (folder / "run.txt").string();
  CHECK_THROWS_WITH_AS(simulate_times(chain_graph(1e9, 7), options), doctest::Contains("must end in .vcd"), Error);
}

TEST_CASE("hardware files choose the accelerator and check its settings") {
  CHECK(make_hardware("systolic", Params()).processor.systolic.rows == 32);
  CHECK(make_hardware("systolic", Params::parse({"array_rows=128", "dataflow=is"})).processor.systolic.rows == 128);
  CHECK_THROWS_WITH_AS(make_hardware("systolic", Params::parse({"dataflow=xs"})),
                       doctest::Contains("unknown dataflow 'xs'"), Error);
  CHECK_THROWS_WITH_AS(make_hardware("h100", Params::parse({"dataflow=os"})),
                       doctest::Contains("dataflow is a setting of the systolic accelerator"), Error);
  // The systolic cost model on another profile: the default 32x32 array.
  CHECK(make_hardware("h100", Params::parse({"cost_model=systolic"})).processor.systolic.cols == 32);
  // The fixed model on a systolic profile runs the cost model's (the same array's) cycles.
  GraphConfig fixed = test::graph_config("lenet5", "gpipe", "systolic", 2, 4, 1);
  fixed.params = {"accelerator=fixed"};
  GraphConfig array = fixed;
  array.params.clear();
  CHECK(flat(simulate_times(make_graph(fixed))) == flat(simulate_times(make_graph(array))));
  CHECK(make_hardware("h100", Params::parse({"accelerator=mine"})).processor.accelerator.model == "mine");
}
