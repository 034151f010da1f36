// layerpipe: the modulo scheduler reaches max(iteration bound, ceil(work / P)) on unit hardware,
// with the bounds computed here in closed form; the unrolled graph runs at that period; forwards
// lag Delay(l) = 2 S(l) updates; bad parameters are clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/modulo_scheduler.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/schedule/warm_to_linear.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig layerpipe_config(const std::string& model, int P, int iterations, std::vector<std::string> params = {}) {
  GraphConfig config = test::graph_config(model, "layerpipe", "unit", P, 1, iterations);
  config.params = std::move(params);
  return config;
}

}  // namespace

TEST_CASE("layerpipe's period is max(iteration bound, ceil(work / P)) on unit hardware") {
  int checked = 0;
  for (const std::string model : {"lenet5", "alexnet", "vgg16", "resnet20", "resnet56", "resnet110", "mlp"}) {
    for (int P = 1; P <= 9; ++P) {
      const TaskGraph g = make_graph(layerpipe_config(model, P, 1));
      const int L = static_cast<int>(g.stages.size());  // one stage (weight owner) per layer
      // Delay(l) = 2 S(l): S(l) counts the pipeline stages after l's.
      std::set<int> groups;
      for (const auto& stage : g.stages) groups.insert(stage.weight_delay);
      const int stages = static_cast<int>(groups.size());
      CHECK(stages == std::min(P, static_cast<int>(g.schedule_metrics.at("pipeline_stages"))));
      CHECK(g.stages.back().weight_delay == 0);
      CHECK(g.stages.front().weight_delay == 2 * (stages - 1));
      // Unit model: F, BA and BW one cycle each per layer, U free. The loop of layer l runs its
      // forward and the later ones (L - l), the later layers' BA (L - l - 1), then BA_l or BW_l,
      // and U_l; it carries 1 + Delay(l) iterations.
      double iteration_bound = 0;
      for (int l = 0; l < L; ++l) {
        iteration_bound = std::max(iteration_bound, 2.0 * (L - l) / (1 + g.stages[l].weight_delay));
      }
      const auto work = static_cast<std::int64_t>(3 * L);
      const std::int64_t expected =
          std::max<std::int64_t>(static_cast<std::int64_t>(std::ceil(iteration_bound - 1e-9)), (work + P - 1) / P);
      CAPTURE(model);
      CAPTURE(P);
      CHECK(g.schedule_metrics.at("iteration_bound_cycles") == doctest::Approx(iteration_bound).epsilon(1e-6));
      CHECK(g.schedule_metrics.at("processor_bound_cycles") == static_cast<double>((work + P - 1) / P));
      CHECK(g.schedule_metrics.at("period_cycles") == static_cast<double>(expected));
      ++checked;
    }
  }
  CHECK(checked == 63);
}

TEST_CASE("the unrolled layerpipe graph runs at the scheduled period") {
  for (const std::string model : {"lenet5", "vgg16", "resnet20"}) {
    for (int P : {2, 7, 9}) {
      const int N = 24;
      const TaskGraph g = make_graph(layerpipe_config(model, P, N));
      REQUIRE(validate(g).empty());
      const auto times = evaluate_times(g);
      // First forward's start per iteration: a steady state of the scheduled period.
      std::vector<std::int64_t> first_forward(N, -1);
      for (const auto& t : g.tasks) {
        if (t.kind == TaskKind::F && t.first_layer == 0) first_forward[t.minibatch] = times[t.id].start_cycles;
      }
      const double measured = static_cast<double>(first_forward[N - 1] - first_forward[N / 2]) / (N - 1 - N / 2);
      CAPTURE(model);
      CAPTURE(P);
      CHECK(measured <= g.schedule_metrics.at("period_cycles"));
      CHECK(measured >= g.schedule_metrics.at("lower_bound_cycles") - 1);  // a ceiling's worth
    }
  }
}

TEST_CASE("layerpipe forwards lag 2 S(l) updates, backwards read their forward's version") {
  const TaskGraph g = make_graph(layerpipe_config("resnet20", 4, 12));
  REQUIRE(validate(g).empty());
  std::map<std::tuple<int, int>, int> forward_version;
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::F) {
      CHECK(t.version_read == std::max(0, t.minibatch - g.stages[t.stage].weight_delay));
      forward_version[{t.stage, t.minibatch}] = t.version_read;
    }
  }
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::BA || t.kind == TaskKind::BW) CHECK(t.version_read == forward_version.at({t.stage, t.minibatch}));
  }
  // A wrong version is caught.
  TaskGraph broken = g;
  for (auto& t : broken.tasks) {
    if (t.kind == TaskKind::F && t.minibatch == 11 && t.stage == 0) t.version_read += 1;
  }
  CHECK(!validate(broken).empty());
}

TEST_CASE("the iteration bound equals the largest loop ratio found by enumeration on small graphs") {
  // Random small task sets on a ring with chords: the bound must equal the best simple cycle's
  // cost / distance, enumerated by depth-first search.
  std::uint32_t seed = 12345;
  auto next = [&](int n) { seed = seed * 1103515245u + 12345u; return static_cast<int>((seed >> 16) % n); };
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 3 + next(4);
    std::vector<ModuloTask> tasks(n);
    for (auto& t : tasks) t.cost_cycles = 1 + next(9);
    std::vector<ModuloEdge> edges;
    for (int v = 0; v + 1 < n; ++v) edges.push_back({v, v + 1, 0, 0, 0});
    for (int k = 0; k < 3; ++k) {
      const int a = next(n), b = next(n);
      if (a > b) edges.push_back({a, b, 1 + next(3), 0, 0});
      else if (a < b) edges.push_back({a, b, next(2), 0, 0});
    }
    edges.push_back({n - 1, 0, 1 + next(3), 0, 0});
    double best = 0;
    std::vector<int> path;
    std::vector<bool> on_path(n, false);
    // Simple cycles through their smallest vertex `root`.
    std::function<void(int, int, double, int)> dfs = [&](int root, int at, double cost, int distance) {
      for (const auto& e : edges) {
        if (e.from != at || e.to < root) continue;
        if (e.to == root) {
          if (distance + e.distance > 0) best = std::max(best, (cost + static_cast<double>(tasks[at].cost_cycles)) / (distance + e.distance));
        } else if (!on_path[e.to]) {
          on_path[e.to] = true;
          dfs(root, e.to, cost + static_cast<double>(tasks[at].cost_cycles), distance + e.distance);
          on_path[e.to] = false;
        }
      }
    };
    for (int root = 0; root < n; ++root) {
      on_path[root] = true;
      dfs(root, root, 0, 0);
      on_path[root] = false;
    }
    CAPTURE(trial);
    CHECK(iteration_bound_cycles(tasks, edges) == doctest::Approx(best).epsilon(1e-8));
    const ModuloSchedule schedule = modulo_schedule(tasks, edges, 2);
    CHECK(schedule.period_cycles >= std::ceil(best - 1e-9));
  }
}

TEST_CASE("a sender's copy takes its processor: the modulo scheduler places a consumer away only where the copy fits") {
  // Two tasks of 10 cycles, A -> B. Without a copy B runs beside A at period 10 (20 cycles of work
  // on 2 processors). With the sender copying 100 cycles, a split needs 110 on A's processor, so
  // B stays with A at 20. With a copy of 4, the split fits at 10 + 4 = 14 (A, then its copy, on
  // one processor; B on the other), under the 20 of running both on one.
  const std::vector<ModuloTask> tasks(2, ModuloTask{10, -1, {}});
  const auto schedule_with_copy = [&](std::int64_t sender_cycles) {
    ModuloEdge edge{0, 1, 0, 0, 0};
    edge.sender_cycles = sender_cycles;
    return modulo_schedule(tasks, {edge}, 2);
  };
  const ModuloSchedule free_copy = schedule_with_copy(0);
  CHECK(free_copy.period_cycles == 10);
  CHECK(free_copy.processor[0] != free_copy.processor[1]);
  const ModuloSchedule dear_copy = schedule_with_copy(100);
  CHECK(dear_copy.period_cycles == 20);
  CHECK(dear_copy.processor[0] == dear_copy.processor[1]);
  const ModuloSchedule cheap_copy = schedule_with_copy(4);
  CHECK(cheap_copy.period_cycles == 14);
  CHECK(cheap_copy.processor[0] != cheap_copy.processor[1]);
  CHECK(cheap_copy.start_cycles[1] >= cheap_copy.start_cycles[0] + 10 + 4);  // after A and its copy

  // An edge back from a later task (B of iteration n to A of n + 1): B's processor copies after B.
  // Independent otherwise, the two split at period 10 without the copy; with a copy of 4 the
  // sender needs 10 + 4 in each period, and A of the next iteration starts after it.
  ModuloEdge back{1, 0, 1, 0, 0};
  CHECK(modulo_schedule(tasks, {back}, 2).period_cycles == 10);
  back.sender_cycles = 4;
  const ModuloSchedule copied_back = modulo_schedule(tasks, {back}, 2);
  CHECK(copied_back.period_cycles == 14);
  CHECK(copied_back.processor[0] != copied_back.processor[1]);
  CHECK(copied_back.start_cycles[0] + copied_back.period_cycles >= copied_back.start_cycles[1] + 10 + 4);
}

TEST_CASE("layerpipe parameters: clear errors") {
  CHECK_THROWS_WITH_AS(make_graph(layerpipe_config("resnet20", 4, 2, {"stages=40"})),
                       doctest::Contains("can be cut into 1 to"), Error);
  CHECK_THROWS_WITH_AS(make_graph(layerpipe_config("resnet20", 4, 2, {"ba_parts=0"})),
                       doctest::Contains("ba_parts must be between 1 and 8"), Error);
  CHECK_THROWS_WITH_AS(make_graph(layerpipe_config("resnet20", 4, 2, {"cuts=3"})),
                       doctest::Contains("residual"), Error);
}

TEST_CASE("layerpipe: a backward away from its forward's processor gets the stash it reads by transfer") {
  // mlp widths 40, 24, 16, 10: dense layers, ReLU on the hidden ones, softmax loss on the last. A
  // layer's stash is its input (in x samples) and, for a hidden layer, its ReLU output (out x
  // samples), for the last its loss gradient (classes x samples); floats of 4 bytes. A BW goes
  // back to the linear output and on to the weights: all of it. A BA part: all but the input.
  const std::vector<std::int64_t> widths{40, 24, 16, 10};
  const std::int64_t samples = 12;  // batch 24, 2 microbatches
  int to_bw = 0, to_ba = 0;
  for (int P = 2; P <= 4; ++P) {
    GraphConfig config = test::graph_config("mlp", "layerpipe", "unit", P, 2, 2);
    config.params = {"widths=40,24,16,10", "batch=24"};
    const TaskGraph g = make_graph(config);
    for (const auto& reader : g.tasks) {
      if (reader.placement != Placement::processor || !is_backward(reader.kind)) continue;
      for (const auto& d : reader.deps) {
        const Task& x = g.tasks[static_cast<std::size_t>(d.task)];
        if (d.carries != Carries::stash || x.kind != TaskKind::X) continue;
        const auto l = static_cast<std::size_t>(reader.first_layer);
        const std::int64_t input = widths[l] * samples * 4;
        const std::int64_t rest = widths[l + 1] * samples * 4;  // ReLU output, or loss gradient
        INFO("P=" << P << " " << describe_task(g, reader));
        CHECK(x.bytes == (reader.kind == TaskKind::BW ? input + rest : rest));
        (reader.kind == TaskKind::BW ? to_bw : to_ba) += 1;
      }
      // Nothing reads a stash across processors without a transfer bringing it.
      const bool brought = std::any_of(reader.deps.begin(), reader.deps.end(), [&](const Dep& d) {
        return d.carries == Carries::stash && g.tasks[static_cast<std::size_t>(d.task)].kind == TaskKind::X;
      });
      for (const auto& f : g.tasks) {
        if (f.kind == TaskKind::F && f.first_layer == reader.first_layer && f.minibatch == reader.minibatch &&
            f.microbatch == reader.microbatch) {
          CHECK_MESSAGE(brought == (f.resource != reader.resource), describe_task(g, reader));
        }
      }
    }
  }
  CHECK(to_bw > 0);  // both kinds happen in these schedules
  CHECK(to_ba > 0);
}

TEST_CASE("layerpipe with a calibration: every BA part pays the way back to the linear output, and a share of the rest") {
  // BA 3 ms, BW 5 ms, fused B 6 ms per layer (for 8 samples): 2 ms back to the linear output, which
  // BA and BW each go once and B once for both, and 1 ms of dx that splits by samples.
  GraphConfig config = test::graph_config("mlp", "layerpipe", "cpu-core", 1, 2, 2);
  config.params = {"widths=8,4,2", "batch=16", "ba_parts=2"};
  const Network net = make_request(config).network;
  auto calibration = std::make_shared<Calibration>();
  calibration->samples = 8;
  for (const auto& layer : net.layers) calibration->layers[layer.name] = {1e-3, 3e-3, 5e-3, 6e-3, 1e-4};
  config.calibration = calibration;
  const TaskGraph graph = make_graph(config);
  const double clock_hz = graph.clock_hz;
  int parts_seen = 0;
  for (const auto& t : graph.tasks) {
    if (t.kind != TaskKind::BA || t.first_layer == 0) continue;  // the first layer's BA has no dx
    CAPTURE(t.first_layer);
    // 8 samples a microbatch: 2 ms + 1 ms / 2 parts.
    CHECK(static_cast<double>(t.cost_cycles) == doctest::Approx(2.5e-3 * clock_hz).epsilon(1e-6));
    ++parts_seen;
  }
  CHECK(parts_seen == 2 * 2 * 2 * static_cast<int>(net.size() - 1));  // minibatches x microbatches x parts x layers
  // The same layer without a fused B measured: the parts split all of it.
  for (auto& [name, times] : calibration->layers) times.backward_s = -1;
  for (const auto& t : make_graph(config).tasks) {
    if (t.kind == TaskKind::BA && t.first_layer > 0) CHECK(static_cast<double>(t.cost_cycles) == doctest::Approx(1.5e-3 * clock_hz).epsilon(1e-6));
  }
}

TEST_CASE("layerpipe with a calibration: a BA part pays the dx the table says no part escapes, and its samples' share of the rest") {
  // As above: 2 ms back to the linear output and 1 ms of dx per layer for 8 samples; of the dx,
  // 0.4 ms does not shrink with samples (BA_fixed_s). A part of n of the 8 samples costs
  // 2 + 0.4 + 0.6 n / 8 ms: 2.7 ms for 2 parts of 4; 2.55, 2.625 and 2.625 ms for 3 parts of 2, 3
  // and 3 samples; a figure above the dx is the dx (each part pays it all).
  GraphConfig config = test::graph_config("mlp", "layerpipe", "cpu-core", 1, 2, 2);
  const Network net = make_request(config).network;
  auto calibration = std::make_shared<Calibration>();
  calibration->samples = 8;
  for (const auto& layer : net.layers) {
    calibration->layers[layer.name] = {1e-3, 3e-3, 5e-3, 6e-3, 1e-4};
    calibration->layers[layer.name].activation_grad_fixed_s = 0.4e-3;
  }
  config.calibration = calibration;
  const auto part_ms = [&](const std::string& parts) {
    config.params = {"widths=8,4,2", "batch=16", "ba_parts=" + parts};
    const TaskGraph graph = make_graph(config);
    std::map<std::int32_t, double> by_part;  // the same for every layer and microbatch
    for (const auto& t : graph.tasks) {
      if (t.kind != TaskKind::BA || t.first_layer == 0) continue;
      const double ms = static_cast<double>(t.cost_cycles) / graph.clock_hz * 1e3;
      if (by_part.count(t.part)) CHECK(ms == doctest::Approx(by_part.at(t.part)).epsilon(1e-9));
      by_part[t.part] = ms;
    }
    return by_part;
  };
  const auto two = part_ms("2");
  REQUIRE(two.size() == 2);
  CHECK(two.at(0) == doctest::Approx(2.7).epsilon(1e-6));
  CHECK(two.at(1) == doctest::Approx(2.7).epsilon(1e-6));
  const auto three = part_ms("3");
  REQUIRE(three.size() == 3);
  CHECK(three.at(0) == doctest::Approx(2.55).epsilon(1e-6));
  CHECK(three.at(1) == doctest::Approx(2.625).epsilon(1e-6));
  CHECK(three.at(2) == doctest::Approx(2.625).epsilon(1e-6));
  // One part: the whole BA, the figure moot.
  const auto one = part_ms("1");
  REQUIRE(one.size() == 1);
  CHECK(one.at(0) == doctest::Approx(3.0).epsilon(1e-6));
  for (auto& [name, times] : calibration->layers) times.activation_grad_fixed_s = 5e-3;
  const auto capped = part_ms("2");
  CHECK(capped.at(0) == doctest::Approx(3.0).epsilon(1e-6));
  CHECK(capped.at(1) == doctest::Approx(3.0).epsilon(1e-6));
  // The dx of one-layer parts timed apart (BA_dx_one_layer_s: 0.6 ms for the 8 samples) in place
  // of the table's 1 ms: a part of n costs 2 + 0.4 + 0.2 n / 8 ms, 2.5 ms for 2 parts of 4; 2.45,
  // 2.475 and 2.475 ms for 3 parts of 2, 3 and 3; one part 2 + 0.6 ms.
  for (auto& [name, times] : calibration->layers) {
    times.activation_grad_fixed_s = 0.4e-3;
    times.activation_grad_dx_one_layer_s = 0.6e-3;
  }
  const auto two_alone = part_ms("2");
  CHECK(two_alone.at(0) == doctest::Approx(2.5).epsilon(1e-6));
  CHECK(two_alone.at(1) == doctest::Approx(2.5).epsilon(1e-6));
  const auto three_alone = part_ms("3");
  CHECK(three_alone.at(0) == doctest::Approx(2.45).epsilon(1e-6));
  CHECK(three_alone.at(1) == doctest::Approx(2.475).epsilon(1e-6));
  CHECK(three_alone.at(2) == doctest::Approx(2.475).epsilon(1e-6));
  CHECK(part_ms("1").at(0) == doctest::Approx(2.6).epsilon(1e-6));
}

TEST_CASE("layerpipe with a calibration: a BA part or BW right after another of its layer goes back to the linear output warm") {
  // As above (2 ms back to the linear output, 1 ms of dx, 3 ms of dW past it), and the table's way
  // back taken again: 0.5 ms by a BA part, 0.25 ms by a BW. On one processor each layer's tasks
  // run F ... BA part 0, BA part 1, BW, U: part 1 and the BW follow another task of their layer
  // and microbatch, so they go back warm; part 0 follows the layer above's update, and the first
  // layer's BW (no BA there) the second layer's update.
  GraphConfig config = test::graph_config("mlp", "layerpipe", "cpu-core", 1, 2, 2);
  config.params = {"widths=8,4,2", "batch=16", "ba_parts=2"};
  const Network net = make_request(config).network;
  auto calibration = std::make_shared<Calibration>();
  calibration->samples = 8;
  for (const auto& layer : net.layers) calibration->layers[layer.name] = {1e-3, 3e-3, 5e-3, 6e-3, 1e-4, 0.5e-3, 0.25e-3};
  config.calibration = calibration;
  const TaskGraph graph = make_graph(config);
  const std::vector<bool> warm = repeats_to_linear(graph);
  const double clock_hz = graph.clock_hz;
  const auto ms = [&](const Task& t) { return static_cast<double>(t.cost_cycles) / clock_hz * 1e3; };
  int warm_parts = 0, warm_bws = 0;
  for (const auto& t : graph.tasks) {
    CAPTURE(t.id);
    if (t.kind == TaskKind::BA) {
      REQUIRE(t.first_layer > 0);
      CHECK(warm[static_cast<std::size_t>(t.id)] == (t.part == 1));
      CHECK(ms(t) == doctest::Approx(t.part == 1 ? 1.0 : 2.5).epsilon(1e-6));  // 0.5 or 2 ms, + 1 ms / 2
      warm_parts += t.part == 1 ? 1 : 0;
    } else if (t.kind == TaskKind::BW) {
      CHECK(warm[static_cast<std::size_t>(t.id)] == (t.first_layer > 0));
      CHECK(ms(t) == doctest::Approx(t.first_layer > 0 ? 3.25 : 5.0).epsilon(1e-6));  // 5 ms - 2 + 0.25
      warm_bws += t.first_layer > 0 ? 1 : 0;
    } else {
      CHECK_FALSE(warm[static_cast<std::size_t>(t.id)]);
    }
  }
  const int backwards = 2 * 2 * static_cast<int>(net.size() - 1);  // minibatches x microbatches x layers with a BA
  CHECK(warm_parts == backwards);
  CHECK(warm_bws == backwards);
  // A table that timed the first part's way back in one-layer tasks (1.2 ms): part 0 pays that,
  // part 1 still the way back again; the dx each part shares is still the table's BA past its own
  // way back (1 ms); the BWs as before. Without a fused B the figure is moot: the parts split all
  // of the BA's 3 ms.
  for (auto& [name, times] : calibration->layers) times.activation_grad_to_linear_one_layer_s = 1.2e-3;
  for (const bool has_b : {true, false}) {
    for (auto& [name, times] : calibration->layers) times.backward_s = has_b ? 6e-3 : -1;
    for (const auto& t : make_graph(config).tasks) {
      CAPTURE(t.id);
      if (t.kind == TaskKind::BA) CHECK(ms(t) == doctest::Approx(!has_b ? 1.5 : t.part == 1 ? 1.0 : 1.7).epsilon(1e-6));
      if (t.kind == TaskKind::BW && has_b) CHECK(ms(t) == doctest::Approx(t.first_layer > 0 ? 3.25 : 5.0).epsilon(1e-6));
    }
  }
  for (auto& [name, times] : calibration->layers) times.activation_grad_to_linear_one_layer_s = -1;
  // Without the time taken again (older tables), or without a fused B to tell the first time's,
  // every BW costs the table's 5 ms.
  for (const bool has_b : {true, false}) {
    for (auto& [name, times] : calibration->layers) {
      times.weight_grad_to_linear_again_s = has_b ? -1 : 0.25e-3;
      times.backward_s = has_b ? 6e-3 : -1;
    }
    for (const auto& t : make_graph(config).tasks) {
      if (t.kind == TaskKind::BW) CHECK(ms(t) == doctest::Approx(5.0).epsilon(1e-6));
    }
  }
  // Across processors only a task whose processor ran another of its layer and microbatch just
  // before it goes back warm (the others' predecessors, by order, are another layer's or kind's).
  for (auto& [name, times] : calibration->layers) times = {1e-3, 3e-3, 5e-3, 6e-3, 1e-4, 0.5e-3, 0.25e-3};
  config.processors = 2;
  const TaskGraph two = make_graph(config);
  const std::vector<bool> warm_two = repeats_to_linear(two);
  for (const auto& t : two.tasks) {
    if (!warm_two[static_cast<std::size_t>(t.id)]) continue;
    CAPTURE(t.id);
    const Task* previous = nullptr;
    for (const auto& other : two.tasks) {
      if (other.placement == t.placement && other.resource == t.resource && other.order == t.order - 1) previous = &other;
    }
    REQUIRE(previous != nullptr);
    CHECK(previous->first_layer == t.first_layer);
    CHECK(previous->microbatch == t.microbatch);
    CHECK(previous->minibatch == t.minibatch);
    CHECK((previous->kind == TaskKind::BA || previous->kind == TaskKind::BW));
  }
  // Sequential's fused B goes back once: nothing there is warm.
  config.schedule = "sequential";
  config.processors = 1;
  config.params = {"widths=8,4,2", "batch=16"};
  const TaskGraph fused = make_graph(config);
  const std::vector<bool> none = repeats_to_linear(fused);
  CHECK(std::none_of(none.begin(), none.end(), [](bool b) { return b; }));
}

TEST_CASE("layerpipe: no BA at the first layer, and nothing moved for one, but on the unit model") {
  // Nothing needs the gradient at the network's input: its layer declares no activation-gradient
  // work, the executors compute none and their tables time it at 0. The graph then has no task
  // there, no weights or stash of the first layer travel to a BA, and the first update waits on
  // its BW alone; with the roofline model and with a calibration alike. The unit model (the
  // paper's: every BA one cycle) keeps it.
  for (int P = 1; P <= 3; ++P) {
    CAPTURE(P);
    GraphConfig config = test::graph_config("mlp", "layerpipe", "cpu-core", P, 2, 2);
    config.params = {"widths=40,24,16,10", "batch=16"};
    const Network net = make_request(config).network;
    CHECK(net.layers.front().activation_grad_flops == 0);
    GraphConfig unit = config;
    unit.hardware = "unit";
    const TaskGraph on_unit = make_graph(unit);
    CHECK(std::any_of(on_unit.tasks.begin(), on_unit.tasks.end(),
                      [](const Task& t) { return t.kind == TaskKind::BA && t.first_layer == 0; }));
    const TaskGraph roofline = make_graph(config);
    CHECK(std::none_of(roofline.tasks.begin(), roofline.tasks.end(),
                       [](const Task& t) { return t.kind == TaskKind::BA && t.first_layer == 0; }));
    auto calibration = std::make_shared<Calibration>();
    calibration->samples = 8;
    for (const auto& layer : net.layers) calibration->layers[layer.name] = {1e-4, 2e-4, 2e-4, 3e-4, 1e-5};
    calibration->layers[net.layers.front().name].activation_grad_s = 0;  // as the executors' tables
    calibration->layer_overhead_s = 1e-6;
    config.calibration = calibration;
    const TaskGraph calibrated = make_graph(config);
    const auto check = [&](const TaskGraph& g) {
      CHECK(validate(g).empty());
      int first_layer_updates = 0;
      for (const auto& t : g.tasks) {
        CHECK_FALSE((t.kind == TaskKind::BA && t.first_layer == 0));
        for (const auto& d : t.deps) {  // the first layer's weights go nowhere; its stash only to a BW
          const Task& x = g.tasks[static_cast<std::size_t>(d.task)];
          if (x.kind != TaskKind::X || x.first_layer != 0) continue;
          CHECK(x.deps.front().carries != Carries::weights);
          if (x.deps.front().carries == Carries::stash) CHECK(t.kind == TaskKind::BW);
        }
        if (t.kind == TaskKind::U && t.first_layer == 0) {
          ++first_layer_updates;
          REQUIRE(t.deps.size() == 1);
          const Task& from = g.tasks[static_cast<std::size_t>(t.deps.front().task)];
          CHECK(t.deps.front().carries == Carries::weight_gradient);
          CHECK((from.kind == TaskKind::BW || from.kind == TaskKind::X));
        }
      }
      CHECK(first_layer_updates == 2 * 2);  // one per iteration (microbatch)
      // Every other layer keeps its BA.
      for (std::int32_t l = 1; l < static_cast<std::int32_t>(net.size()); ++l) {
        CHECK(std::any_of(g.tasks.begin(), g.tasks.end(),
                          [l](const Task& t) { return t.kind == TaskKind::BA && t.first_layer == l; }));
      }
    };
    check(roofline);
    check(calibrated);
  }
}
