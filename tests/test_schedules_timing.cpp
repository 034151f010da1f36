// Schedule timing on unit hardware against closed forms computed here: GPipe and 1F1B bubbles,
// sequential execution, PipeDream's steady-state period; and a CPU calibration's transfers
// charged to the sending processor where every core runs a processor.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;
using pipetwin::test::uniform_config;

TEST_CASE("gpipe and 1f1b bubble fraction is (P-1)/(M+P-1) on uniform layers") {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (int P = 1; P <= 8; ++P) {
      for (int M = 1; M <= 12; M += (M < 4 ? 1 : 3)) {
        for (int K = 1; K <= 3; K += 2) {
          CAPTURE(schedule);
          CAPTURE(P);
          CAPTURE(M);
          CAPTURE(K);
          const int layers_per_stage = 2;
          const TaskGraph g = make_graph(uniform_config(schedule, P * layers_per_stage, P, M, K));
          validate_or_throw(g);
          const Result r = evaluate(g);
          const double bubble = static_cast<double>(P - 1) / (M + P - 1);
          CHECK(r.bubble_fraction == doctest::Approx(bubble).epsilon(1e-12));
          // Each stage's F + B is 3 cycles per layer; a flush per minibatch.
          const std::int64_t stage_cycles = 3 * layers_per_stage;
          CHECK(r.total_cycles == K * (M + P - 1) * stage_cycles);
          CHECK(r.iteration_cycles == doctest::Approx((M + P - 1) * stage_cycles));
        }
      }
    }
  }
}

TEST_CASE("sequential keeps one microbatch in flight: P processors are each busy 1/P of the time") {
  for (int P = 1; P <= 6; ++P) {
    const int layers = 12, M = 3, K = 2;
    const TaskGraph g = make_graph(uniform_config("sequential", layers, P, M, K));
    validate_or_throw(g);
    const Result r = evaluate(g);
    CHECK(r.total_cycles == K * M * 3 * layers);
    CHECK(r.mean_utilization == doctest::Approx(1.0 / P));
  }
}

TEST_CASE("pipedream's steady-state period is its slowest stage's F+B, per microbatch") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int P = std::uniform_int_distribution<int>(1, 6)(rng);
    const int layers = P + std::uniform_int_distribution<int>(0, 8)(rng);
    // Random cut points: stages of unequal length.
    std::vector<int> points(layers - 1);
    for (int i = 0; i < layers - 1; ++i) points[i] = i;
    std::shuffle(points.begin(), points.end(), rng);
    std::vector<int> cuts(points.begin(), points.begin() + (P - 1));
    std::sort(cuts.begin(), cuts.end());
    std::string cut_text;
    for (const int c : cuts) cut_text += (cut_text.empty() ? "" : ",") + std::to_string(c);
    std::vector<std::string> extra;
    if (P > 1) extra.push_back("cuts=" + cut_text);
    const int M = std::uniform_int_distribution<int>(1, 4)(rng), K = 16;
    CAPTURE(trial);
    CAPTURE(P);
    CAPTURE(cut_text);
    CAPTURE(M);
    const TaskGraph g = make_graph(uniform_config("pipedream", layers, P, M, K, extra));
    validate_or_throw(g);
    const Result r = evaluate(g);
    int longest = 0, first = 0;
    cuts.push_back(layers - 1);
    for (const int last : cuts) {
      longest = std::max(longest, last - first + 1);
      first = last + 1;
    }
    const double slowest_stage_f_plus_b = 3.0 * longest;
    CHECK(r.iteration_cycles == doctest::Approx(M * slowest_stage_f_plus_b));
  }
}

TEST_CASE("seconds are cycles over the clock") {
  const GraphConfig config = test::graph_config("resnet20", "1f1b", "h100", 2, 4, 2);
  const TaskGraph g = make_graph(config);
  const Result r = evaluate(g);
  CHECK(r.total_s == doctest::Approx(static_cast<double>(r.total_cycles) / 1.98e9));
  CHECK(r.iteration_s == doctest::Approx(r.iteration_cycles / 1.98e9));
}

TEST_CASE("zero bubble on uniform layers: zb-h1 a third of 1f1b's bubble, zb-h2 none") {
  // F = BA = BW = one unit per layer on `unit` hardware. Per steady-state iteration (K = 4
  // minibatches, no barrier between them) a processor is busy 3M units of a stage; the closed
  // forms of Qi et al. 2024: 1F1B idles (P-1)(F+B) = 3(P-1), ZB-H1 (P-1)(F+BA-BW) = P-1, and
  // ZB-H2 nothing, given enough microbatches (M >= P; M >= 2P for ZB-H2).
  for (int P = 2; P <= 6; ++P) {
    for (int M = P; M <= 3 * P; M += 2) {
      CAPTURE(P);
      CAPTURE(M);
      const int layers_per_stage = 2;
      const double busy = 3.0 * M * layers_per_stage;
      auto bubble = [&](const std::string& schedule) {
        const TaskGraph g = make_graph(uniform_config(schedule, P * layers_per_stage, P, M, 4));
        validate_or_throw(g);
        return 1.0 - busy / evaluate(g).iteration_cycles;
      };
      CHECK(bubble("1f1b") == doctest::Approx(static_cast<double>(P - 1) / (M + P - 1)));
      CHECK(bubble("zb-h1") == doctest::Approx(static_cast<double>(P - 1) / (3 * M + P - 1)));
      if (M >= 2 * P) CHECK(bubble("zb-h2") == doctest::Approx(0.0));
    }
  }
}

TEST_CASE("zb-h2 buys its bubble with memory: more activations in flight than zb-h1") {
  for (const int P : {2, 4}) {
    std::vector<std::int64_t> peaks;
    for (const std::string schedule : {"zb-h1", "zb-h2"}) {
      // Balanced stage costs (the roofline's) let H2 run ahead by its larger activation limit; with
      // the operator model's costs resnet20's stages are uneven enough that H2 never gets to.
      GraphConfig config = test::graph_config("resnet20", schedule, "h100", P, 8, 2);
      config.params = {"hardware.cost_model=roofline"};
      peaks.push_back(evaluate(make_graph(config)).peak_memory_bytes[0]);
    }
    CAPTURE(P);
    CHECK(peaks[1] > peaks[0]);
  }
}

TEST_CASE("interleaved-1f1b bubble is (P-1)/(vM+P-1) on uniform layers") {
  // Narayanan et al. 2021: v model chunks per processor shrink 1F1B's bubble v-fold.
  for (int P = 2; P <= 4; ++P) {
    for (const int v : {1, 2, 3}) {
      for (int M = P; M <= 3 * P; M += P) {
        CAPTURE(P);
        CAPTURE(v);
        CAPTURE(M);
        const TaskGraph g = make_graph(uniform_config("interleaved-1f1b", 2 * v * P, P, M, 1,
                                                      {"chunks=" + std::to_string(v)}));
        validate_or_throw(g);
        CHECK(evaluate(g).bubble_fraction == doctest::Approx(static_cast<double>(P - 1) / (v * M + P - 1)));
      }
    }
  }
  CHECK_THROWS_WITH_AS(make_graph(uniform_config("interleaved-1f1b", 8, 4, 6, 1)),
                       "interleaved-1f1b: the microbatches (6) must be a multiple of the processors (4)", Error);
}

TEST_CASE("a CPU calibration's copies take the sending processor's core where every core has a processor") {
  // mlp 16 -> 12 -> 8 -> 4 cut after its first layer, 2 microbatches of 4 samples, gpipe on 2 CPU
  // threads: each microbatch's activation (12 x 4 floats) goes p0 -> p1, its gradient p1 -> p0.
  const auto graph_with_cores = [](std::int32_t cores, bool across_ranks = false,
                                    std::vector<std::pair<std::int64_t, double>> copy_seconds = {}, double handoff_s = -1,
                                    std::vector<std::pair<std::int64_t, double>> pipeline_copy_seconds = {},
                                    double task_gap_s = -1) {
    GraphConfig config = graph_config("mlp", "gpipe", "cpu-core", 2, 2, 1);
    config.params = {"widths=16,12,8,4", "batch=8", "cuts=0"};
    auto calibration = std::make_shared<Calibration>();
    calibration->device = "cpu";
    calibration->samples = 4;
    calibration->copy_bytes_per_s = 1e8;
    calibration->copy_latency_s = 1e-5;
    calibration->cores = cores;
    calibration->handoff_s = handoff_s;
    calibration->copy_seconds = std::move(copy_seconds);
    calibration->pipeline_copy_seconds = std::move(pipeline_copy_seconds);
    calibration->task_gap_s = task_gap_s;
    if (across_ranks) {  // p0 and p1 on ranks 0 and 1: every transfer is a message
      calibration->ranks = 2;
      calibration->message_send_core_s = 1e-5;
      calibration->message_send_core_bytes_per_s = 1e8;
      calibration->message_receive_core_s = 2e-5;
      calibration->message_receive_core_bytes_per_s = 5e7;
    }
    for (const auto& layer : make_network("mlp", Params::parse({"widths=16,12,8,4", "batch=8"})).layers) {
      calibration->layers[layer.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
    }
    config.calibration = calibration;
    return make_graph(config);
  };
  const TaskGraph apart = graph_with_cores(4);  // more cores than processors: copies take none
  const TaskGraph shared = graph_with_cores(2);
  REQUIRE(apart.tasks.size() == shared.tasks.size());
  const double copy_cycles = std::ceil(12.0 * 4 * 4 / (1e8 / apart.clock_hz));  // 192 bytes at 100 MB/s
  REQUIRE(copy_cycles > 0);
  // The same graph with no cores recorded: nothing charged.
  const TaskGraph unknown = graph_with_cores(0);
  for (std::size_t i = 0; i < apart.tasks.size(); ++i) CHECK(unknown.tasks[i].cost_cycles == apart.tasks[i].cost_cycles);
  // Each processor: a task whose data a transfer copies off this processor pays that copy (its
  // sender's thread makes it right after the task, before the next). p0 sends after each forward
  // (F m0, F m1), p1 after each backward (B m0, B m1).
  int charged = 0;
  for (const auto& order : tasks_by_processor(apart)) {
    for (const auto id : order) {
      const Task& before = apart.tasks[static_cast<std::size_t>(id)];
      const Task& after = shared.tasks[static_cast<std::size_t>(id)];
      const bool sends = (before.resource == 0 && before.kind == TaskKind::F) || (before.resource == 1 && before.kind == TaskKind::B);
      INFO(describe_task(apart, before));
      CHECK(static_cast<double>(after.cost_cycles - before.cost_cycles) == (sends ? copy_cycles : 0.0));
      charged += sends ? 1 : 0;
    }
  }
  CHECK(charged == 4);
  // In one process the sender's thread makes each copy (every transfer of both links reads a task
  // of its sender, in the link's order): the transfer is one wake-up, half the table's two-hop
  // copy_latency_s (it records no handoff_s); its copy is its sender's (above).
  const std::vector<bool> by_sender = links_copied_by_senders(apart);
  REQUIRE(by_sender.size() == 2);
  CHECK(by_sender[0]);
  CHECK(by_sender[1]);
  // (whole cycles, rounded up past a float's last bit, as the cost model rounds)
  const double latency_cycles = std::ceil(1e-5 * apart.clock_hz - 1e-9), handoff_cycles = std::ceil(0.5e-5 * apart.clock_hz - 1e-9);
  for (std::size_t k = 0; k < apart.links.size(); ++k) {
    CHECK(static_cast<double>(apart.links[k].latency_cycles) == latency_cycles);
    CHECK(static_cast<double>(shared.links[k].latency_cycles) == handoff_cycles);
    // A table without handoff_s keeps a link thread's latency whole; a sender's copy has the
    // reader's wake-up alone, after the link (docs/design.md, "Links").
    CHECK(apart.links[k].wake_cycles == 0);
    CHECK(apart.links[k].delivery_cycles == 0);
    CHECK(shared.links[k].wake_cycles == 0);
    CHECK(static_cast<double>(shared.links[k].delivery_cycles) == handoff_cycles);
  }
  // A table that timed the handoff (4 us of the 10 us latency) splits a link thread's latency:
  // the thread's wake-up and the reader's, 4 us each (rounded down: parts of the whole).
  const TaskGraph timed = graph_with_cores(4, false, {}, 4e-6);
  for (const auto& link : timed.links) {
    CHECK(static_cast<double>(link.latency_cycles) == latency_cycles);
    CHECK(static_cast<double>(link.wake_cycles) == std::floor(4e-6 * timed.clock_hz));
    CHECK(static_cast<double>(link.delivery_cycles) == std::floor(4e-6 * timed.clock_hz));
  }
  int transfers = 0;
  for (const auto& t : apart.tasks) {
    if (t.placement != Placement::link) continue;
    INFO(describe_task(apart, t));
    CHECK(static_cast<double>(t.cost_cycles) == latency_cycles + copy_cycles);
    CHECK(static_cast<double>(shared.tasks[static_cast<std::size_t>(t.id)].cost_cycles) == handoff_cycles);
    ++transfers;
  }
  CHECK(transfers == 4);
  // Where the table timed copies of several sizes, the sender's copy takes what a copy of its size
  // took (linear between the points): 192 bytes between 100 bytes in 1 us and 300 in 2 us, 1.46 us,
  // in the sender's task it reads.
  const TaskGraph sized = graph_with_cores(2, false, {{100, 1e-6}, {300, 2e-6}});
  const double sized_cycles = std::ceil((1e-6 + 1e-6 * 92 / 200) * apart.clock_hz - 1e-9);
  REQUIRE(sized_cycles != copy_cycles);
  for (std::size_t i = 0; i < apart.tasks.size(); ++i) {
    const auto& t = apart.tasks[i];
    INFO(describe_task(apart, t));
    if (t.placement == Placement::link) {
      CHECK(static_cast<double>(sized.tasks[i].cost_cycles) == handoff_cycles);
      continue;
    }
    const auto charged_in_one_process = shared.tasks[i].cost_cycles - t.cost_cycles;
    CHECK(static_cast<double>(sized.tasks[i].cost_cycles - t.cost_cycles) == (charged_in_one_process > 0 ? sized_cycles : 0.0));
  }
  // A table timed in a pipeline: a sender's copy there took 1.8 us at 200 bytes, where the copies
  // in a row give 1.5 us (0.3 us more), and 0.25 us passed between a thread's tasks. Every
  // processor task pays the gap; a sender's copy pays the row's copy of its size, the 0.3 us, and
  // the gap after it.
  const TaskGraph pipelined = graph_with_cores(2, false, {{100, 1e-6}, {300, 2e-6}}, -1, {{200, 1.8e-6}}, 0.25e-6);
  const TaskGraph gap_only = graph_with_cores(2, false, {{100, 1e-6}, {300, 2e-6}}, -1, {}, 0.25e-6);
  // A copy of a size the pipeline made (192 bytes, 0.7 us there) costs what it took there.
  const TaskGraph same_size = graph_with_cores(2, false, {{100, 1e-6}, {300, 2e-6}}, -1, {{192, 0.7e-6}, {200, 1.8e-6}}, 0.25e-6);
  const double same_size_copy_cycles = std::ceil((0.7e-6 + 0.25e-6) * apart.clock_hz - 1e-9);
  const double gap_cycles = std::ceil(0.25e-6 * apart.clock_hz - 1e-9);
  const double pipelined_copy_cycles = std::ceil((1e-6 + 1e-6 * 92 / 200 + 0.3e-6 + 0.25e-6) * apart.clock_hz - 1e-9);
  const double gap_copy_cycles = std::ceil((1e-6 + 1e-6 * 92 / 200 + 0.25e-6) * apart.clock_hz - 1e-9);
  for (std::size_t i = 0; i < apart.tasks.size(); ++i) {
    const auto& t = apart.tasks[i];
    if (t.placement == Placement::link) continue;
    INFO(describe_task(apart, t));
    const bool copies = shared.tasks[i].cost_cycles > t.cost_cycles;
    CHECK(static_cast<double>(pipelined.tasks[i].cost_cycles - t.cost_cycles) == gap_cycles + (copies ? pipelined_copy_cycles : 0.0));
    CHECK(static_cast<double>(gap_only.tasks[i].cost_cycles - t.cost_cycles) == gap_cycles + (copies ? gap_copy_cycles : 0.0));
    CHECK(static_cast<double>(same_size.tasks[i].cost_cycles - t.cost_cycles) == gap_cycles + (copies ? same_size_copy_cycles : 0.0));
  }
  // Between ranks each transfer is a message: the sender pays its measured packing (10 us + 192
  // bytes at 100 MB/s) after the message's source, and the receiver its measured unpacking (20 us
  // + 192 bytes at 50 MB/s) on the task before the message's reader. By hand, for gpipe's orders
  // p0: F0 F1 B0 B1 U and p1: F0 F1 B0 B1 U, activations F0, F1 (p0) -> p1's F0, F1 and
  // gradients B0, B1 (p1) -> p0's B0, B1:
  const TaskGraph messages = graph_with_cores(2, true);
  const double send = std::ceil((1e-5 + 192 / 1e8) * apart.clock_hz);
  const double receive = std::ceil((2e-5 + 192 / 5e7) * apart.clock_hz);
  const auto extra = [&](TaskKind kind, std::int32_t microbatch, std::int32_t stage) {
    for (const auto& t : apart.tasks) {
      if (t.placement == Placement::processor && t.kind == kind && t.microbatch == microbatch && t.stage == stage) {
        return static_cast<double>(messages.tasks[static_cast<std::size_t>(t.id)].cost_cycles - t.cost_cycles);
      }
    }
    FAIL("no such task");
    return 0.0;
  };
  CHECK(extra(TaskKind::F, 0, 0) == 0);
  CHECK(extra(TaskKind::F, 1, 0) == send + receive);  // after F0's message; before B0, which reads p1's B0
  CHECK(extra(TaskKind::B, 0, 0) == send + receive);  // after F1's message; before B1, which reads p1's B1
  CHECK(extra(TaskKind::B, 1, 0) == 0);
  CHECK(extra(TaskKind::U, -1, 0) == 0);
  CHECK(extra(TaskKind::F, 0, 1) == receive);         // before F1, which reads p0's F1 (F0 is first: p1 waits)
  CHECK(extra(TaskKind::F, 1, 1) == 0);
  CHECK(extra(TaskKind::B, 0, 1) == 0);
  CHECK(extra(TaskKind::B, 1, 1) == send);            // after B0's message
  CHECK(extra(TaskKind::U, -1, 1) == send);           // after B1's message
  for (const auto& t : apart.tasks) {
    if (t.placement == Placement::link) CHECK(static_cast<double>(messages.tasks[static_cast<std::size_t>(t.id)].cost_cycles - t.cost_cycles) == send);
  }
  // A transfer its sender's thread copies has read its source when the task charged with the copy
  // ends (the executor frees the source as the copy ends, before the sender's next task starts):
  // each forward's activation on p0 and each backward's gradient on p1, read by its transfer alone,
  // is freed after the task that made it; with links' threads, after the transfer. Across ranks
  // (a message, no sender's copy) also after the transfer.
  int sources = 0;
  for (const auto& t : apart.tasks) {
    if (t.placement != Placement::link) continue;
    REQUIRE(data_dependency(t) != nullptr);
    const std::int32_t source = data_dependency(t)->task;
    const auto freed_after = [&](const TaskGraph& g) {
      for (const auto& b : g.buffers) {
        if (b.name.kind == BufferKind::output && b.name.owner == source) return b.freed_after;
      }
      FAIL("no output buffer");
      return std::vector<std::int32_t>{};
    };
    INFO(describe_task(apart, t));
    CHECK(freed_after(apart) == std::vector<std::int32_t>{t.id});
    CHECK(freed_after(messages) == std::vector<std::int32_t>{t.id});
    CHECK(freed_after(shared) == std::vector<std::int32_t>{source});
    ++sources;
  }
  CHECK(sources == 4);
}
