// The weight-reuse model (schedule/weight_reuse.hpp): working sets written out by hand from each
// schedule's order on a three-layer MLP, the table's own order charged nothing on the whole, the
// calibration's reuse curve read, written and interpolated, and the measured curve's shape.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "pipetwin/exec/cpu/reuse_curve.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/weight_reuse.hpp"

using namespace pipetwin;

namespace {

GraphConfig mlp_config(const std::string& schedule, int microbatches, int minibatches) {
  GraphConfig config = graph_config("mlp", schedule, "cpu-core", 1, microbatches, minibatches);
  config.params = {"widths=64,32,16,8", "batch=16"};
  return config;
}

// The touch of `block` of `layer` by the first task of `kind` in that minibatch and microbatch.
const WeightTouch& touch_of(const TaskGraph& graph, const std::vector<WeightTouch>& touches, TaskKind kind,
                            std::int32_t minibatch, std::int32_t microbatch, std::int32_t layer, WeightBlock block) {
  for (const auto& touch : touches) {
    const Task& t = graph.tasks[static_cast<std::size_t>(touch.task)];
    if (t.kind == kind && t.minibatch == minibatch && t.microbatch == microbatch && touch.layer == layer &&
        touch.block == block) {
      return touch;
    }
  }
  throw Error("no such touch");
}

// A curve that rises linearly from 0 at 1 KB to 10 ns a byte at 1 MB: every working set here
// (tens of KB) prices differently.
Calibration curve_table(const Network& net) {
  Calibration c;
  c.reuse_extra_s_per_byte = {{1000, 0.0}, {1000000, 1e-8}};
  for (const auto& layer : net.layers) c.layers[layer.name] = LayerTimes{};
  return c;
}

}  // namespace

TEST_CASE("weight reuse: working sets of gpipe's and sequential's forwards, by hand") {
  for (const std::string schedule : {"gpipe", "sequential"}) {
    CAPTURE(schedule);
    const GraphConfig config = mlp_config(schedule, 2, 2);
    const TaskGraph graph = make_graph(config);
    const Network net = make_request(config).network;
    REQUIRE(net.size() == 3);
    const std::int64_t n = graph.samples_per_microbatch;
    const auto w = [&](int l) { return net.layers[static_cast<std::size_t>(l)].param_bytes; };
    const auto out = [&](int l) { return net.layers[static_cast<std::size_t>(l)].output_bytes * n; };
    const auto in = [&](int l) { return net.layers[static_cast<std::size_t>(l)].input_bytes * n; };
    const auto stash = [&](int l) { return net.layers[static_cast<std::size_t>(l)].stash_bytes * n; };
    const std::vector<WeightTouch> touches = weight_touches(graph, net);
    // Layer 0's weights, read by the second microbatch's forward: since the first's,
    const std::int64_t forwards = w(1) + w(2) + out(0) + out(1) + out(2);  // the first forward's other layers
    // and, in sequential's order, the first microbatch's backward: layers 2 and 1 read their weights
    // (counted) and add into their sums, layer 0 into its sum only (no input gradient there).
    const std::int64_t backward = w(2) + w(1) + w(0) + in(2) + stash(2) + in(1) + stash(1) + stash(0);
    const std::int64_t expected = w(0) + forwards + (schedule == "sequential" ? backward : 0);
    CHECK(touch_of(graph, touches, TaskKind::F, 0, 1, 0, WeightBlock::forward_weights).working_set_bytes == expected);
    // The very first touch has none.
    CHECK(touch_of(graph, touches, TaskKind::F, 0, 0, 0, WeightBlock::forward_weights).working_set_bytes == -1);
  }
}

TEST_CASE("weight reuse: an update reads its sum and old version at once, writes the new version over the sum, and the next sum takes the old version's memory") {
  // pipedream on one processor: F, B, U per microbatch. The second microbatch's forward reads the
  // version the first update wrote over layer 0's sum: since that sum's touch, the update touched
  // the old weights of layer 0 and the sums and weights of layers 1 and 2.
  const GraphConfig config = mlp_config("pipedream", 2, 2);
  const TaskGraph graph = make_graph(config);
  const Network net = make_request(config).network;
  const auto w = [&](int l) { return net.layers[static_cast<std::size_t>(l)].param_bytes; };
  const std::vector<WeightTouch> touches = weight_touches(graph, net);
  const WeightTouch& second_forward = touch_of(graph, touches, TaskKind::F, 0, 1, 0, WeightBlock::forward_weights);
  CHECK(second_forward.working_set_bytes == 2 * w(0) + 2 * w(1) + 2 * w(2));
  // Its backward writes a sum (one microbatch an update: the sum's first backward, which reads
  // nothing) in the old version's memory, read in that update beside the sum: since then every
  // layer's new version and next sum (all six blocks), and the second microbatch's activations as
  // its forward and backward passed them (layer 0's after its touch).
  const std::int64_t n = graph.samples_per_microbatch;
  const auto passed = [&](int l, std::int64_t Layer::*bytes) { return net.layers[static_cast<std::size_t>(l)].*bytes * n; };
  const WeightTouch& second_sum = touch_of(graph, touches, TaskKind::B, 0, 1, 0, WeightBlock::backward_gradient);
  CHECK(second_sum.working_set_bytes == 2 * w(0) + 2 * w(1) + 2 * w(2) + passed(0, &Layer::output_bytes) +
                                            passed(1, &Layer::output_bytes) + passed(2, &Layer::output_bytes) +
                                            passed(2, &Layer::input_bytes) + passed(2, &Layer::stash_bytes) +
                                            passed(1, &Layer::input_bytes) + passed(1, &Layer::stash_bytes));
  CHECK(second_sum.written);
  // The update reads the old version beside the sum: its working set counts the sum.
  const Task* first_update = nullptr;
  for (const auto& t : graph.tasks) {
    if (t.kind == TaskKind::U && t.minibatch == 0 && t.microbatch == 0) first_update = &t;
  }
  REQUIRE(first_update != nullptr);
  std::vector<std::int64_t> update_sets;
  for (const auto& touch : touches) {
    if (touch.task == first_update->id && touch.layer == 2) update_sets.push_back(touch.working_set_bytes);
  }
  REQUIRE(update_sets.size() == 2);  // the sum, then the version read, of layer 2
  // The version read was last touched by the backward's input gradient; since then: its own
  // bytes, the sum read beside it, the update's layers 0 and 1 (sum and version each), and the
  // backward's activations from layer 2's on.
  CHECK(update_sets[1] == w(2) + w(2) + w(1) + w(1) + w(0) + w(0) + passed(2, &Layer::input_bytes) +
                              passed(2, &Layer::stash_bytes) + passed(1, &Layer::input_bytes) +
                              passed(1, &Layer::stash_bytes) + passed(0, &Layer::stash_bytes));
}

TEST_CASE("weight reuse: a sum's first backward writes it, reading nothing, and is priced at nothing") {
  // sequential, four microbatches an update: the first backward of each minibatch writes each
  // layer's sum, the other three add into it.
  const GraphConfig config = mlp_config("sequential", 4, 2);
  const TaskGraph graph = make_graph(config);
  const Network net = make_request(config).network;
  const std::vector<WeightTouch> touches = weight_touches(graph, net);
  int written = 0, added = 0;
  for (const auto& touch : touches) {
    if (touch.block != WeightBlock::backward_gradient) {
      CHECK_FALSE(touch.written);
      continue;
    }
    const Task& t = graph.tasks[static_cast<std::size_t>(touch.task)];
    CAPTURE(task_label(t));
    CHECK(touch.written == (t.microbatch == 0));
    ++(touch.written ? written : added);
  }
  CHECK(written == 2 * 3);  // two minibatches, three layers
  CHECK(added == 2 * 3 * 3);
  // The table's mean for the sums is its adds' alone; pipedream (an update a microbatch) writes
  // every sum, so its backwards are charged for their weights read back only.
  Calibration table = curve_table(net);
  record_weight_reuse(table, graph, net, 0);
  for (std::size_t l = 0; l < net.size(); ++l) {
    double adds_s = 0;
    int count = 0;
    for (const auto& touch : touches) {
      if (touch.layer != static_cast<std::int32_t>(l) || touch.block != WeightBlock::backward_gradient || touch.written) continue;
      adds_s += table.reuse_extra_s(touch.working_set_bytes, touch.bytes);
      ++count;
    }
    REQUIRE(count == 2 * 3);
    CHECK(table.layers.at(net.layers[l].name).backward_gradient_reuse_s == doctest::Approx(adds_s / count));
  }
  const TaskGraph pipedream = make_graph(mlp_config("pipedream", 4, 2));
  const std::vector<double> charge_s = weight_reuse_charge_s(pipedream, net, table);
  for (const Task& t : pipedream.tasks) {
    if (t.kind != TaskKind::B) continue;
    CAPTURE(task_label(t));
    double weights_s = 0;  // what its reads of the weights cost over the table's
    for (const auto& touch : weight_touches(pipedream, net)) {
      if (touch.task != t.id) continue;
      CHECK((touch.block == WeightBlock::backward_weights || touch.written));
      if (touch.block == WeightBlock::backward_weights) {
        weights_s += table.reuse_extra_s(touch.working_set_bytes, touch.bytes) -
                     table.layers.at(net.layers[static_cast<std::size_t>(touch.layer)].name).backward_weights_reuse_s;
      }
    }
    CHECK(charge_s[static_cast<std::size_t>(t.id)] == doctest::Approx(weights_s).scale(1e-9));
  }
}

TEST_CASE("weight reuse: the table's own order is charged nothing on the whole, gpipe's forwards less") {
  const GraphConfig timed_config = mlp_config("sequential", 4, 3);
  const TaskGraph timed = make_graph(timed_config);
  const Network net = make_request(timed_config).network;
  Calibration table = curve_table(net);
  record_weight_reuse(table, timed, net, 1);
  for (const auto& [name, times] : table.layers) {
    CAPTURE(name);
    CHECK(times.forward_weights_reuse_s > 0);
    CHECK(times.backward_gradient_reuse_s > 0);
  }
  CHECK(table.layers.at(net.layers[0].name).backward_weights_reuse_s == -1);  // the first layer reads none back
  const std::vector<double> charge_s = weight_reuse_charge_s(timed, net, table);
  double steady_s = 0, largest_s = 0;
  for (const Task& t : timed.tasks) {
    if (t.minibatch < 1) continue;
    steady_s += charge_s[static_cast<std::size_t>(t.id)];
    largest_s = std::max(largest_s, std::abs(charge_s[static_cast<std::size_t>(t.id)]));
  }
  CHECK(largest_s > 0);  // tasks differ (the first forward after an update) ...
  CHECK(std::abs(steady_s) < 1e-6 * largest_s);  // ... but their sum is the table's
  // gpipe's forwards follow forwards: a smaller working set, so under the table.
  const TaskGraph gpipe = make_graph(mlp_config("gpipe", 4, 3));
  const std::vector<double> gpipe_s = weight_reuse_charge_s(gpipe, net, table);
  double forwards_s = 0;
  for (const Task& t : gpipe.tasks) {
    if (t.kind == TaskKind::F && t.minibatch >= 1) forwards_s += gpipe_s[static_cast<std::size_t>(t.id)];
  }
  CHECK(forwards_s < 0);
  // make_graph charges it: a calibrated gpipe graph's forward costs less than the same without the curve.
  GraphConfig with = mlp_config("gpipe", 4, 3);
  auto priced = std::make_shared<Calibration>(table);
  priced->samples = 4;
  for (auto& [name, times] : priced->layers) times.forward_s = times.backward_s = times.activation_grad_s = times.weight_grad_s = 1e-3;
  with.calibration = priced;
  const TaskGraph charged = make_graph(with);
  auto plain = std::make_shared<Calibration>(*priced);
  plain->reuse_extra_s_per_byte.clear();
  with.calibration = plain;
  const TaskGraph uncharged = make_graph(with);
  std::int64_t charged_cycles = 0, uncharged_cycles = 0;
  for (std::size_t i = 0; i < charged.tasks.size(); ++i) {
    if (charged.tasks[i].kind != TaskKind::F || charged.tasks[i].minibatch < 1) continue;
    charged_cycles += charged.tasks[i].cost_cycles;
    uncharged_cycles += uncharged.tasks[i].cost_cycles;
  }
  CHECK(static_cast<double>(charged_cycles - uncharged_cycles) == doctest::Approx(forwards_s * charged.clock_hz).epsilon(1e-2));
}

TEST_CASE("calibration: the reuse curve interpolates, round-trips and rejects bad points") {
  Calibration c;
  CHECK(c.reuse_extra_s(5000, 100) == 0);  // no curve
  c.reuse_extra_s_per_byte = {{1000, 0.0}, {3000, 2e-11}, {5000, 4e-11}};
  CHECK(c.reuse_extra_s(500, 100) == 0);
  CHECK(c.reuse_extra_s(2000, 100) == doctest::Approx(100 * 1e-11).scale(0));
  CHECK(c.reuse_extra_s(4000, 100) == doctest::Approx(100 * 3e-11).scale(0));
  CHECK(c.reuse_extra_s(9000, 100) == doctest::Approx(100 * 4e-11).scale(0));
  CHECK(c.reuse_extra_s(-1, 100) == doctest::Approx(100 * 4e-11).scale(0));  // never touched: the far end
  c.device = "cpu";
  c.layers["fc"] = LayerTimes{};
  c.layers["fc"].forward_weights_reuse_s = 2e-6;
  const Calibration back = calibration_from_json_text(calibration_to_json_text(c), "test");
  CHECK(back.reuse_extra_s_per_byte == c.reuse_extra_s_per_byte);
  CHECK(back.layers.at("fc").forward_weights_reuse_s == doctest::Approx(2e-6).scale(0));
  CHECK(back.layers.at("fc").backward_weights_reuse_s == -1);
  const auto read_with_curve = [&](std::vector<std::pair<std::int64_t, double>> points) {
    Calibration bad = c;
    bad.reuse_extra_s_per_byte = std::move(points);  // the writer writes what it is given
    return calibration_from_json_text(calibration_to_json_text(bad), "test");
  };
  CHECK_NOTHROW(read_with_curve({{1000, 0.0}, {2000, 1e-11}}));
  CHECK_THROWS_AS(read_with_curve({{2000, 0.0}, {1000, 1e-11}}), Error);  // not ascending
  CHECK_THROWS_AS(read_with_curve({{0, 0.0}}), Error);
  CHECK_THROWS_AS(read_with_curve({{1000, -1e-11}}), Error);
  CHECK_THROWS_AS(read_with_curve({{1000, 1.0}}), Error);  // a second a byte
}

TEST_CASE("the measured reuse curve starts at 0 and never falls") {
  const auto curve = cpu::measure_reuse_curve(64 << 10, 3, 16 << 10);
  REQUIRE(curve.size() >= 3);
  CHECK(curve.front().first == (16 << 10));
  CHECK(curve.front().second == 0);
  CHECK(curve.back().first >= 16 * (64 << 10));
  for (std::size_t i = 1; i < curve.size(); ++i) {
    CHECK(curve[i].first > curve[i - 1].first);
    CHECK(curve[i].second >= curve[i - 1].second);
  }
  CHECK_THROWS_AS(cpu::measure_reuse_curve(1024, 3), Error);
  CHECK_THROWS_AS(cpu::measure_reuse_curve(64 << 10, 0), Error);
  CHECK_THROWS_AS(cpu::measure_reuse_curve(cpu::kMostReuseCurveCacheBytes * 2, 3), Error);
  // A block larger than 2.5 caches: the block's own working set, then the far end.
  const auto big_block = cpu::measure_reuse_curve(8 << 10, 2, 64 << 10);
  REQUIRE(big_block.size() == 2);
  CHECK(big_block.front().first == (64 << 10));
  CHECK(big_block.back().first > (64 << 10));
}
