// The stash reuse distance (schedule/stash_reuse.hpp) on graphs laid out by hand, the bytes
// worked out here; on real schedules, the orders it must rank: gpipe holds its stashes longer
// than 1f1b, and 1f1b's last stage reads back what it just stashed; and the stash term's share,
// floor and scaled table (calibration.hpp), by hand.
#include <doctest/doctest.h>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/stash_reuse.hpp"

using namespace pipetwin;

namespace {

// Two layers, per sample (input, output, stash): (10, 20, 30) and (20, 5, 40) bytes.
Network two_layers() {
  Network net;
  net.name = "two";
  const std::int64_t sizes[2][3] = {{10, 20, 30}, {20, 5, 40}};
  for (const auto& s : sizes) {
    Layer layer;
    layer.input_bytes = s[0];
    layer.output_bytes = s[1];
    layer.stash_bytes = s[2];
    net.layers.push_back(layer);
  }
  return net;
}

Task task(TaskKind kind, std::int32_t first, std::int32_t last, std::int32_t processor, std::int32_t order,
          std::int32_t minibatch = 1, std::int32_t microbatch = 0) {
  Task t;
  t.kind = kind;
  t.first_layer = first;
  t.last_layer = last;
  t.resource = processor;
  t.order = order;
  t.minibatch = minibatch;
  t.microbatch = microbatch;
  return t;
}

TaskGraph graph_of(std::vector<Task> tasks, std::int64_t samples) {
  TaskGraph g;
  g.samples_per_microbatch = samples;
  for (std::size_t i = 0; i < tasks.size(); ++i) tasks[i].id = static_cast<std::int32_t>(i);
  g.tasks = std::move(tasks);
  return g;
}

}  // namespace

TEST_CASE("stash reuse: one processor, a forward then its backward, by hand") {
  // Listed out of order: the processor's order is `order`'s.
  const TaskGraph g = graph_of({task(TaskKind::B, 0, 1, 0, 3), task(TaskKind::F, 0, 1, 0, 0, 0), task(TaskKind::B, 0, 1, 0, 1, 0),
                                task(TaskKind::F, 0, 1, 0, 2)},
                               2);
  // Minibatch 0 passes 2 (60 + 65) + 2 (65 + 60) = 500 bytes, and counts no distance. Minibatch
  // 1's forward stashes layer 0 at 500 + 120 = 620 and layer 1 at 620 + 130 = 750; its backward
  // reads layer 1 at 750 (distance 0), passes 130 and reads layer 0 at 880 (distance 260).
  // Weighted by the stashes, 80 and 60 bytes: (0 * 80 + 260 * 60) / 140.
  const std::vector<StashReuse> r = stash_reuse(g, two_layers());
  REQUIRE(r.size() == 1);
  CHECK(r[0].distance_bytes == doctest::Approx(260.0 * 60 / 140));
  CHECK(r[0].read_back_bytes == 140);
  CHECK(r[0].remote_bytes == 0);
}

TEST_CASE("stash reuse: gpipe's order holds a stash longer, and a stash read on another processor stands apart") {
  Network net = two_layers();
  net.layers.pop_back();
  const TaskGraph g = graph_of({task(TaskKind::F, 0, 0, 0, 0, 1, 0), task(TaskKind::F, 0, 0, 0, 1, 1, 1),
                                task(TaskKind::B, 0, 0, 0, 2, 1, 1), task(TaskKind::B, 0, 0, 0, 3, 1, 0),
                                task(TaskKind::BW, 0, 0, 1, 0, 1, 0)},
                               1);
  // Each task passes 60 bytes. Microbatch 1: stashed at 120, read at 120 (0); microbatch 0:
  // stashed at 60, read at 180 (120). Both stashes 30 bytes: a mean of 60.
  const std::vector<StashReuse> r = stash_reuse(g, net);
  REQUIRE(r.size() == 2);
  CHECK(r[0].distance_bytes == doctest::Approx(60.0));
  CHECK(r[1].distance_bytes == -1);  // nothing of its own read back
  CHECK(r[1].remote_bytes == 30);
}

TEST_CASE("stash reuse: a task whose layers the network lacks is an error") {
  const TaskGraph g = graph_of({task(TaskKind::F, 0, 2, 0, 0)}, 1);
  CHECK_THROWS_AS(stash_reuse(g, two_layers()), Error);
}

TEST_CASE("stash reuse: on resnet8 at P = 2, gpipe's processors hold their stashes longer than 1f1b's") {
  const auto distances = [](const std::string& schedule) {
    const GraphConfig config = graph_config("resnet8", schedule, "cpu-core", 2, 4, 3);
    return stash_reuse(make_graph(config), make_request(config).network);
  };
  const auto gpipe = distances("gpipe"), one_f_one_b = distances("1f1b");
  REQUIRE(gpipe.size() == 2);
  REQUIRE(one_f_one_b.size() == 2);
  for (std::size_t p = 0; p < 2; ++p) {
    CAPTURE(p);
    CHECK(gpipe[p].distance_bytes > one_f_one_b[p].distance_bytes);
  }
  // 1f1b's last stage runs each microbatch's backward right after its forward: its distance is
  // that forward's and backward's own bytes, less than its first stage's, which holds P of them.
  CHECK(one_f_one_b[1].distance_bytes < one_f_one_b[0].distance_bytes);
}

TEST_CASE("stash term: a graph's share of the way to the far point, worked out by hand") {
  constexpr double MiB = 1 << 20;
  // Timed at 64 and 8 MiB, the far point at 256: processor 0 at 128 MiB is ln 2 / ln 4 = 0.5 of
  // the way, processor 1 at 32 MiB ln 4 / ln 32 = 0.4. The largest, for both.
  CHECK(stash_far_share({128 * MiB, 32 * MiB}, {64 * MiB, 8 * MiB}, 256 * MiB, MiB) == doctest::Approx(0.5));
  // Nearer than the timed run: nothing (never below the table); beyond the far point: all of it.
  CHECK(stash_far_share({32 * MiB, 4 * MiB}, {64 * MiB, 8 * MiB}, 256 * MiB, MiB) == 0);
  CHECK(stash_far_share({512 * MiB, 8 * MiB}, {64 * MiB, 8 * MiB}, 256 * MiB, MiB) == 1);
  // Under the floor every distance is the floor: 0 and 0.5 MiB against a timed 0 are no farther;
  // 4 MiB against a timed 0 is ln 4 / ln 16 = 0.5 of the way to 16 MiB over a 1 MiB floor.
  CHECK(stash_far_share({0.5 * MiB, 0}, {0, 0}, 16 * MiB, MiB) == 0);
  CHECK(stash_far_share({4 * MiB}, {0}, 16 * MiB, MiB) == doctest::Approx(0.5));
  // A processor without a stash of its own read back, or a far point no farther than the table:
  // nothing to go by.
  CHECK(stash_far_share({-1, 32 * MiB}, {64 * MiB, -1}, 256 * MiB, MiB) == 0);
  CHECK(stash_far_share({128 * MiB}, {64 * MiB}, 64 * MiB, MiB) == 0);
  CHECK_THROWS_AS(stash_far_share({1}, {1}, 2, 0), Error);
}

TEST_CASE("stash term: the floor is where the reuse curve reaches half its far end, else 1 MiB") {
  Calibration c;
  CHECK(stash_distance_floor_bytes(c) == 1 << 20);
  c.reuse_extra_s_per_byte = {{256 << 10, 0.0}, {1280 << 10, 9e-12}, {2304 << 10, 18e-12}, {32 << 20, 29e-12}};
  CHECK(stash_distance_floor_bytes(c) == 2304 << 10);  // 18 >= 29 / 2, 9 is not
  c.reuse_extra_s_per_byte = {{256 << 10, 0.0}, {32 << 20, 0.0}};  // a flat curve says nothing
  CHECK(stash_distance_floor_bytes(c) == 1 << 20);
}

TEST_CASE("stash term: a table moved toward its far point scales each layer's forward and backward times apart") {
  Calibration c;
  LayerTimes far;
  far.forward_s = 1;
  far.activation_grad_s = 2;
  far.weight_grad_s = 3;
  far.backward_s = 4;
  far.update_s = 5;
  far.forward_one_layer_s = -1;  // not measured: stays so
  far.far_forward_factor = 1.2;
  far.far_backward_factor = 1.1;
  LayerTimes none = far;
  none.far_forward_factor = none.far_backward_factor = -1;
  c.layers = {{"far", far}, {"none", none}};
  c.task_overhead_s = 7;
  const Calibration moved = with_far_share(c, 0.5);
  const LayerTimes& m = moved.layers.at("far");
  CHECK(m.forward_s == doctest::Approx(1.1));
  CHECK(m.activation_grad_s == doctest::Approx(2.1));
  CHECK(m.weight_grad_s == doctest::Approx(3.15));
  CHECK(m.backward_s == doctest::Approx(4.2));
  CHECK(m.update_s == 5);
  CHECK(m.forward_one_layer_s == -1);
  CHECK(moved.layers.at("none").forward_s == 1);
  CHECK(moved.task_overhead_s == 7);
  CHECK(with_far_share(c, 0).layers.at("far").backward_s == 4);
  CHECK_THROWS_AS(with_far_share(c, 1.5), Error);
}

TEST_CASE("stash reuse: each processor's forward layers, from the first microbatch's forwards") {
  // Processor 1 runs layer 1, processor 0 layer 0; later minibatches, backwards and other
  // placements do not count.
  TaskGraph g = graph_of({task(TaskKind::F, 1, 1, 1, 0, 0, 0), task(TaskKind::F, 0, 0, 0, 0, 0, 0),
                          task(TaskKind::F, 0, 1, 0, 1, 1, 0), task(TaskKind::B, 0, 1, 0, 2, 0, 0)},
                         1);
  Task link = task(TaskKind::F, 0, 1, 2, 0, 0, 0);
  link.placement = Placement::link;
  link.id = 4;
  g.tasks.push_back(link);
  const std::vector<std::vector<std::int32_t>> layers = forward_layers_by_processor(g);
  REQUIRE(layers.size() == 2);
  CHECK(layers[0] == std::vector<std::int32_t>{0});
  CHECK(layers[1] == std::vector<std::int32_t>{1});
}
