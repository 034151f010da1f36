// What a wait costs the task after it (schedule/wait_loss.hpp): the analytic evaluator's charge on
// a graph laid out by hand, the bytes a task touches written out from the layers' sizes, the
// calibration's wait curve read, written and interpolated, and the graph's JSON keeping it.
#include <doctest/doctest.h>

#include <memory>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/wait_loss.hpp"
#include "wait_loss_graph.hpp"

using namespace pipetwin;
using pipetwin::test::waiting_graph;

TEST_CASE("wait loss: the evaluator charges a task for the wait its processor had before it") {
  const TaskGraph g = waiting_graph();
  REQUIRE(structural_problems(g).empty());
  const auto times = evaluate_times(g);
  // A 0..10; D 10..50 (no wait: nothing, whatever its bytes); B 10..15 (its processor's first task:
  // nothing). C: ready at 50, its processor idle since 15: a wait of 35, beyond the last point, 3
  // a byte: 5 + 3 x 4 = 17 cycles, 50..67. E: ready at 67, p0 idle since 50: 17 cycles, 1 + 2 x
  // 7 / 20 = 1.7 a byte: 3 + 1.7 x 10 = 20 cycles, 67..87.
  CHECK(times[0].start_cycles == 0);
  CHECK(times[0].end_cycles == 10);
  CHECK(times[3].end_cycles == 50);
  CHECK(times[1].end_cycles == 15);
  CHECK(times[2].start_cycles == 50);
  CHECK(times[2].end_cycles == 67);
  CHECK(times[4].start_cycles == 67);
  CHECK(times[4].end_cycles == 87);
  // Below the first point, linear from nothing: 5 cycles of wait, half a cycle a byte.
  CHECK(wait_loss_cycles(g, g.tasks[4], 5) == 5);
  CHECK(wait_loss_cycles(g, g.tasks[4], 0) == 0);
  // Without the curve, or without bytes, a wait costs nothing.
  TaskGraph flat = g;
  flat.wait_loss.clear();
  CHECK(evaluate_times(flat)[4].end_cycles == 50 + 5 + 3);
  TaskGraph no_bytes = g;
  for (auto& t : no_bytes.tasks) t.wait_exposed_bytes = 0;
  CHECK(evaluate_times(no_bytes)[4].end_cycles == 58);
}

TEST_CASE("wait loss: a curve out of order, or bytes below zero, is not a graph") {
  TaskGraph g = waiting_graph();
  g.wait_loss = {{30, 1.0}, {10, 3.0}};
  CHECK_FALSE(structural_problems(g).empty());
  CHECK_THROWS_AS(evaluate_times(g), Error);
  g = waiting_graph();
  g.wait_loss[0].extra_cycles_per_byte = -1;
  CHECK_FALSE(structural_problems(g).empty());
  g = waiting_graph();
  g.tasks[2].wait_exposed_bytes = -4;
  CHECK_FALSE(structural_problems(g).empty());
  // A charge that could pass 2^50 cycles is refused as a cost would be.
  g = waiting_graph();
  g.wait_loss = {{10, 1e5}};
  g.tasks[2].wait_exposed_bytes = std::int64_t{1} << 40;
  CHECK_FALSE(structural_problems(g).empty());
}

TEST_CASE("wait loss: the graph's JSON keeps the curve and each task's bytes") {
  const TaskGraph g = waiting_graph();
  const TaskGraph back = graph_from_json(graph_to_json(g), "test");
  REQUIRE(back.wait_loss.size() == 2);
  CHECK(back.wait_loss[1].wait_cycles == 30);
  CHECK(back.wait_loss[1].extra_cycles_per_byte == 3.0);
  CHECK(back.tasks[3].wait_exposed_bytes == 100);
  CHECK(evaluate_times(back)[4].end_cycles == 87);
}

TEST_CASE("wait loss: a task's bytes from its layers' sizes, and a calibrated graph's curve in its cycles") {
  GraphConfig config = graph_config("mlp", "gpipe", "cpu-core", 2, 2, 1);
  config.params = {"widths=64,32,16,8", "batch=16"};
  Calibration table;
  table.wait_curve.extra_s_per_byte = {{0.001, 2e-11}, {0.02, 1e-10}};
  const Network net = make_request(config).network;
  for (const auto& layer : net.layers) table.layers[layer.name] = LayerTimes{1e-6, 1e-6, 1e-6, 1e-6};
  config.calibration = std::make_shared<const Calibration>(table);
  const TaskGraph g = make_graph(config);
  REQUIRE(g.wait_loss.size() == 2);
  CHECK(g.wait_loss[0].wait_cycles == std::llround(0.001 * g.clock_hz));
  CHECK(g.wait_loss[1].extra_cycles_per_byte == doctest::Approx(1e-10 * g.clock_hz).scale(0));
  const std::int64_t n = g.samples_per_microbatch;
  const auto& L = net.layers;
  int forwards = 0, backwards = 0, updates = 0;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::processor) {
      CHECK(t.wait_exposed_bytes == 0);
      continue;
    }
    std::int64_t expected = 0;
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
      const Layer& layer = L[static_cast<std::size_t>(l)];
      if (t.kind == TaskKind::F) {
        expected += layer.param_bytes + layer.output_bytes * n + (l == t.first_layer ? layer.input_bytes * n : 0);
      } else if (t.kind == TaskKind::B) {
        expected += layer.param_bytes + (layer.stash_bytes + layer.input_bytes) * n + layer.stash_fixed_bytes +
                    (l == t.last_layer ? layer.output_bytes * n : 0);
      } else if (t.kind == TaskKind::U) {
        expected += 2 * layer.param_bytes;
      }
    }
    forwards += t.kind == TaskKind::F;
    backwards += t.kind == TaskKind::B;
    updates += t.kind == TaskKind::U;
    CAPTURE(task_label(t));
    CHECK(t.wait_exposed_bytes == expected);
    CHECK(t.wait_exposed_bytes > 0);
  }
  CHECK(forwards == 4);
  CHECK(backwards == 4);
  CHECK(updates == 2);
  // Told the footprint the curve was measured over, each task is charged for at most that many
  // of its bytes.
  std::int64_t largest = 0;
  for (const auto& t : g.tasks) largest = std::max(largest, t.wait_exposed_bytes);
  table.wait_curve.footprint_bytes = largest / 2;
  config.calibration = std::make_shared<const Calibration>(table);
  const TaskGraph capped = make_graph(config);
  int at_cap = 0;
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    CHECK(capped.tasks[i].wait_exposed_bytes == std::min(g.tasks[i].wait_exposed_bytes, largest / 2));
    at_cap += capped.tasks[i].wait_exposed_bytes == largest / 2;
  }
  CHECK(at_cap > 0);
  table.wait_curve.footprint_bytes = 0;
  // Without a curve in the table, no bytes and no curve.
  table.wait_curve.extra_s_per_byte.clear();
  config.calibration = std::make_shared<const Calibration>(table);
  const TaskGraph plain = make_graph(config);
  CHECK(plain.wait_loss.empty());
  for (const auto& t : plain.tasks) CHECK(t.wait_exposed_bytes == 0);
}

TEST_CASE("wait loss: the calibration's curve interpolated, written and read, and bad curves refused") {
  Calibration c;
  c.wait_curve.extra_s_per_byte = {{0.001, 1e-11}, {0.02, 1e-10}};
  CHECK(c.wait_extra_s(0.0005, 1000) == doctest::Approx(0.5e-11 * 1000).scale(0));  // from nothing at no wait
  CHECK(c.wait_extra_s(0.0105, 1000) == doctest::Approx(5.5e-11 * 1000).scale(0));  // halfway
  CHECK(c.wait_extra_s(0.5, 1000) == doctest::Approx(1e-10 * 1000).scale(0));       // held beyond the last
  CHECK(c.wait_extra_s(0, 1000) == 0);
  CHECK(c.wait_extra_s(0.01, 0) == 0);
  CHECK(Calibration().wait_extra_s(0.01, 1000) == 0);
  const Calibration back = calibration_from_json_text(calibration_to_json_text(c), "test");
  REQUIRE(back.wait_curve.extra_s_per_byte.size() == 2);
  CHECK(back.wait_curve.extra_s_per_byte[1].first == 0.02);
  CHECK(back.wait_curve.extra_s_per_byte[1].second == 1e-10);
  CHECK(back.wait_curve.footprint_bytes == 0);  // not known: not written, read as 0
  Calibration with_footprint = c;
  with_footprint.wait_curve.footprint_bytes = std::int64_t{8} << 20;
  CHECK(calibration_from_json_text(calibration_to_json_text(with_footprint), "test").wait_curve.footprint_bytes ==
        std::int64_t{8} << 20);
  CHECK(with_footprint.wait_charged_bytes(std::int64_t{20} << 20) == std::int64_t{8} << 20);
  CHECK(with_footprint.wait_charged_bytes(1000) == 1000);
  CHECK(c.wait_charged_bytes(std::int64_t{20} << 20) == std::int64_t{20} << 20);
  // The written table with its curve replaced by `curve`.
  const std::string text = calibration_to_json_text(c);
  const std::size_t key = text.find("\"wait_extra_s_per_byte\"");
  REQUIRE(key != std::string::npos);
  const std::size_t value = text.find('[', key);
  std::size_t end = value;
  for (int depth = 0; end < text.size(); ++end) {  // past the bracket that closes the curve
    depth += text[end] == '[' ? 1 : text[end] == ']' ? -1 : 0;
    if (depth == 0) break;
  }
  ++end;
  const auto with_curve = [&](const std::string& curve) { return text.substr(0, value) + curve + text.substr(end); };
  CHECK(calibration_from_json_text(with_curve("[[0.01, 1e-10]]"), "test").wait_curve.extra_s_per_byte.size() == 1);
  for (const std::string bad : {"[[0.02, 1e-10], [0.01, 1e-10]]", "[[0, 1e-10]]", "[[0.01, -1e-10]]", "[[0.01]]"}) {
    CAPTURE(bad);  // out of order, no wait, a negative charge, no pair
    CHECK_THROWS_WITH_AS(calibration_from_json_text(with_curve(bad), "test"), doctest::Contains("wait_extra_s_per_byte"), Error);
  }
}
