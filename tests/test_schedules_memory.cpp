// Declared memory of the schedules against closed forms: activations stashed by GPipe (M
// microbatches) and 1F1B (min(M, P)) on the first stage, and PipeDream's weight versions (S - s).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/memory_observer.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig resnet_config(const std::string& schedule, int P, int M, int K = 2) {
  GraphConfig config = test::graph_config("resnet20", schedule, "h100", P, M, K);
  config.params = {"batch=" + std::to_string(8 * M)};
  return config;
}

// Activation bytes one microbatch leaves on stage s, computed from the network's layers.
std::int64_t stash_per_microbatch(const TaskGraph& g, int stage) {
  const Network net = make_network("resnet20", Params::parse({"batch=" + std::to_string(8 * g.microbatches)}));
  std::int64_t bytes = 0, fixed_bytes = 0;  // per sample; per microbatch (batch norm's 1 / std)
  for (int l = g.stages[stage].first_layer; l <= g.stages[stage].last_layer; ++l) {
    bytes += net.layers[l].stash_bytes;
    fixed_bytes += net.layers[l].stash_fixed_bytes;
  }
  return bytes * g.samples_per_microbatch + fixed_bytes;
}

// The most weight versions stage s ever needs at once, walking its processor's order: the newest
// one plus every version read by a forward whose backward has not run yet.
std::size_t most_live_versions(const TaskGraph& g, int stage) {
  std::map<std::pair<int, int>, int> in_flight;  // (minibatch, microbatch) -> version
  int current = 0;
  std::size_t most = 1;
  const auto by_processor = tasks_by_processor(g);
  for (const auto id : by_processor[g.stages[stage].processor]) {
    const Task& t = g.tasks[id];
    if (t.stage != stage) continue;
    if (t.kind == TaskKind::F) in_flight[{t.minibatch, t.microbatch}] = t.version_read;
    if (t.kind == TaskKind::B) in_flight.erase({t.minibatch, t.microbatch});
    if (t.kind == TaskKind::U) current = t.version_written;
    std::set<int> live{current};
    for (const auto& item : in_flight) live.insert(item.second);
    most = std::max(most, live.size());
  }
  return most;
}

}  // namespace

TEST_CASE("the first stage's activation peak: gpipe holds M microbatches, 1f1b min(M, P)") {
  for (int P = 1; P <= 5; ++P) {
    for (const int M : {1, 2, 3, 8}) {
      CAPTURE(P);
      CAPTURE(M);
      for (const std::string schedule : {"gpipe", "1f1b"}) {
        CAPTURE(schedule);
        const TaskGraph g = make_graph(resnet_config(schedule, P, M));
        const int in_flight = schedule == "gpipe" ? M : std::min(M, P);
        CHECK(evaluate(test::only_buffers(g, BufferKind::stash)).peak_memory_bytes[0] ==
              in_flight * stash_per_microbatch(g, 0));
        // Everything else (weights, gradients, data in flight) only adds to it.
        CHECK(evaluate(g).peak_memory_bytes[0] > in_flight * stash_per_microbatch(g, 0));
      }
    }
  }
}

TEST_CASE("a step's peak: the median over the steady steps of each one's peak, not the run's highest") {
  // By hand, on one processor: 100 bytes from the start; steps [10, 20), [20, 30), [30, 40), [40, 50).
  // Step 1 reaches 150 (12-15), step 2 130 (25-28), step 3 610 (110 from time 30, and a spike of
  // 500 at 35-36), step 4 holds what step 3 left live (110) and nothing more. Peaks 150, 130, 610,
  // 110: the upper median is 150; the run's peak is 610.
  const TaskGraph g = make_graph(test::graph_config("mlp", "sequential", "unit", 1, 1, 1));
  MemoryObserver memory(g);
  const BufferName name{BufferKind::output, 0, -1};
  const auto change = [&](std::int64_t cycles, std::int64_t bytes) {
    if (bytes > 0) {
      memory.allocated({name, 0, bytes, 0, cycles});
    } else {
      memory.freed({name, 0, -bytes, 0, cycles});
    }
  };
  memory.allocated({name, 0, 100, -1, 0});
  change(12, 50);
  change(15, -50);
  change(25, 30);
  change(28, -30);
  change(30, 10);
  change(35, 500);
  change(36, -500);
  const MemoryReport steps = memory.report(false, {10, 20, 30, 40, 50});
  CHECK(steps.peak_bytes[0] == 610);
  CHECK(steps.step_peak_bytes[0] == 150);
  CHECK(steps.timeline.empty());  // not asked for
  // Two steps, [30, 40) and [40, 50): 610 and 110, the upper one. No steps: the run's peak.
  CHECK(memory.report(false, {30, 40, 50}).step_peak_bytes[0] == 610);
  CHECK(memory.report(true, {}).step_peak_bytes[0] == 610);
  // A step that begins at an event holds what is live after it: [30, 35) is 110.
  CHECK(memory.report(false, {30, 35}).step_peak_bytes[0] == 110);

  // The steady steps of a run: the second half of its minibatches' ends.
  const TaskGraph four = make_graph(resnet_config("gpipe", 2, 2, 4));
  const std::vector<TaskTiming> times = evaluate(four).tasks;
  std::vector<std::int64_t> ends(4, 0);
  for (const auto& t : four.tasks) ends[t.minibatch] = std::max(ends[t.minibatch], times[t.id].end_cycles);
  CHECK(steady_step_bounds(four, times) == std::vector<std::int64_t>{ends[1], ends[2], ends[3]});
  CHECK(steady_step_bounds(make_graph(resnet_config("gpipe", 2, 2, 1)), evaluate(make_graph(resnet_config("gpipe", 2, 2, 1))).tasks).empty());

  // Every minibatch of gpipe and 1f1b repeats the first's stash peak on stage 0 (closed form above).
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    CAPTURE(schedule);
    const TaskGraph g4 = make_graph(resnet_config(schedule, 3, 4, 4));
    const int in_flight = schedule == "gpipe" ? 4 : 3;
    CHECK(evaluate(test::only_buffers(g4, BufferKind::stash)).step_peak_memory_bytes[0] == in_flight * stash_per_microbatch(g4, 0));
  }
}

TEST_CASE("a step's compute peak leaves out what an update holds only while it runs") {
  // The hand-made run above, with its spike of 500 bytes at 35-36 taken and freed by the graph's
  // update: the step peaks are 150, 130, 610 and 110 (upper median 150), the compute step peaks
  // 150, 130, 110 and 110 (upper median 130); without steps, the run's peak is 610 and its compute
  // peak 150.
  const TaskGraph g = make_graph(test::graph_config("mlp", "sequential", "unit", 1, 1, 1));
  std::int32_t update = -1, forward = -1;
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::U) update = t.id;
    if (t.kind == TaskKind::F) forward = t.id;
  }
  REQUIRE(update >= 0);
  REQUIRE(forward >= 0);
  MemoryObserver memory(g);
  const BufferName name{BufferKind::output, 0, -1};
  const auto change = [&](std::int64_t cycles, std::int64_t bytes, std::int32_t task) {
    if (bytes > 0) {
      memory.allocated({name, 0, bytes, task, cycles});
    } else {
      memory.freed({name, 0, -bytes, task, cycles});
    }
  };
  memory.allocated({name, 0, 100, -1, 0});
  change(12, 50, forward);
  change(15, -50, forward);
  change(25, 30, forward);
  change(28, -30, forward);
  change(30, 10, forward);
  change(35, 500, update);
  change(36, -500, update);
  const MemoryReport steps = memory.report(false, {10, 20, 30, 40, 50});
  CHECK(steps.step_peak_bytes[0] == 150);
  CHECK(steps.step_compute_peak_bytes[0] == 130);
  const MemoryReport whole = memory.report(false, {});
  CHECK(whole.peak_bytes[0] == 610);
  CHECK(whole.step_compute_peak_bytes[0] == 150);
  // An engine's result reports it per processor: for mlp's sequential run, its update holds a new
  // weight version beside the old one and the gradients, more than its forwards and backwards do.
  const Result r = evaluate(make_graph(test::graph_config("mlp", "sequential", "cpu-core", 1, 4, 3)));
  REQUIRE(r.step_compute_peak_memory_bytes.size() == 1);
  CHECK(r.step_compute_peak_memory_bytes[0] > 0);
  CHECK(r.step_compute_peak_memory_bytes[0] < r.step_peak_memory_bytes[0]);
}

TEST_CASE("pipedream keeps S - s weight versions on stage s, and memory accounts for them") {
  for (int P = 1; P <= 6; ++P) {
    // A stream long enough (16 microbatches) for every stage to reach its steady state.
    const TaskGraph g = make_graph(resnet_config("pipedream", P, 4, 4));
    validate_or_throw(g);
    for (int s = 0; s < P; ++s) {
      const std::size_t most = most_live_versions(g, s);
      CAPTURE(P);
      CAPTURE(s);
      CHECK(most == static_cast<std::size_t>(P - s));
      // Every version is a buffer of the stage's parameters; the weights alone hold P - s of them,
      // and one more while an update writes a new one beside the one it reads.
      std::int64_t version_bytes = 0;
      for (const auto& b : g.buffers) {
        if (b.name.kind == BufferKind::weights && b.name.stage == s) version_bytes = b.bytes;
      }
      CHECK(version_bytes > 0);
      const std::int64_t peak = evaluate(test::only_buffers(g, BufferKind::weights)).peak_memory_bytes[s];
      CHECK(peak >= (P - s) * version_bytes);
      CHECK(peak <= (P - s + 1) * version_bytes);
    }
  }
}

TEST_CASE("pipedream-2bw keeps at most two weight versions per stage, forwards use the previous one") {
  for (int P = 2; P <= 5; ++P) {
    GraphConfig config = resnet_config("pipedream-2bw", P, 6, 4);
    const TaskGraph g = make_graph(config);
    validate_or_throw(g);
    for (const auto& t : g.tasks) {
      if (t.kind == TaskKind::F) CHECK(t.version_read == std::max(0, t.minibatch - 1));
    }
    for (int s = 0; s < P; ++s) {
      const std::size_t most = most_live_versions(g, s);
      CAPTURE(P);
      CAPTURE(s);
      CHECK(most <= 2);
    }
  }
}

TEST_CASE("activation offload: the stash waits in host memory between forward and backward") {
  for (const std::string schedule : {"gpipe", "1f1b", "pipedream"}) {
    for (const int P : {1, 2, 4}) {
      CAPTURE(schedule);
      CAPTURE(P);
      // On unit hardware copies are free: the same timing, and the device holds far less.
      GraphConfig config = test::uniform_config(schedule, 2 * P, P, 8, 2);
      config.params.push_back("offload=true");
      const TaskGraph offloaded = make_graph(config);
      REQUIRE(validate(offloaded).empty());
      config.params.pop_back();
      const TaskGraph kept = make_graph(config);
      const Result with = evaluate(offloaded), without = evaluate(kept);
      CHECK(with.total_cycles == without.total_cycles);
      if (schedule == "gpipe") {  // (where a backward follows its forward at once, nothing waits)
        CHECK(with.host_peak_memory_bytes > 0);
        CHECK(with.peak_memory_bytes[0] < without.peak_memory_bytes[0]);
      }
    }
  }
  // On a GPU, gpipe's first stage no longer holds M microbatches of activations.
  GraphConfig config = resnet_config("gpipe", 2, 8);
  const Result without = evaluate(make_graph(config));
  config.params.push_back("offload=true");
  const TaskGraph g = make_graph(config);
  const Result with = evaluate(g);
  CHECK(with.peak_memory_bytes[0] < without.peak_memory_bytes[0]);
  CHECK(with.host_peak_memory_bytes > stash_per_microbatch(g, 0));
  CHECK(with.host_peak_memory_bytes <= 8 * (stash_per_microbatch(g, 0) + stash_per_microbatch(g, 1)));
}

TEST_CASE("selective recomputation: attention cores are dropped and made again (Korthikanti et al. 2022)") {
  // A small GPT: s = 32 tokens, h = 64, a = 4 heads, 2-byte activations, 4 blocks.
  const std::int64_t s = 32, h = 64, a = 4, bytes = 2, blocks = 4;
  auto config = [&](const std::string& recompute) {
    GraphConfig c = test::graph_config("gpt", "gpipe", "h100", 2, 4, 2);
    c.params = {"layers=" + std::to_string(blocks), "hidden=" + std::to_string(h), "heads=" + std::to_string(a),
                "seq=" + std::to_string(s), "vocab=100", "batch=8", "dtype_bytes=" + std::to_string(bytes),
                "recompute=" + recompute};
    return c;
  };
  const TaskGraph none = make_graph(config("none")), selective = make_graph(config("selective")),
                  full = make_graph(config("full"));
  REQUIRE(validate(selective).empty());
  const std::int64_t n = selective.samples_per_microbatch;
  int checked = 0;
  for (const auto& t : selective.tasks) {
    if (t.kind != TaskKind::F) continue;
    // The paper's per-layer activation memory: 34 s h (kept) + 5 a s^2 (the attention core) bytes
    // per sample at 2-byte activations.
    std::int64_t in_blocks = 0, other = 0;
    std::vector<std::string> model_params = config("none").params;
    model_params.pop_back();  // the recompute parameter is the schedule's
    const Network net = make_network("gpt", Params::parse(model_params));
    for (int l = t.first_layer; l <= t.last_layer; ++l) {
      if (net.layers[static_cast<std::size_t>(l)].type == "transformer_block") {
        ++in_blocks;
      } else {
        other += net.layers[static_cast<std::size_t>(l)].stash_bytes * n;
      }
    }
    std::int32_t rc = -1;
    for (const auto& r : selective.tasks) {
      if (r.kind == TaskKind::RC && r.first_layer == t.first_layer && r.minibatch == t.minibatch &&
          r.microbatch == t.microbatch) {
        rc = r.id;
      }
    }
    CAPTURE(describe_task(selective, t));
    CHECK(test::buffer_bytes(selective, BufferKind::stash, t.id) == in_blocks * 34 * s * h * bytes / 2 * n + other);
    if (in_blocks == 0) {
      CHECK(rc < 0);  // nothing to recompute on this stage
      continue;
    }
    REQUIRE(rc >= 0);
    CHECK(test::buffer_bytes(selective, BufferKind::stash, rc) == in_blocks * 5 * a * s * s * bytes / 2 * n);
    // Cheaper than the forward it partly repeats (its attention products and softmax only; this
    // small model is dominated by launch overheads, which the recomputation pays per block too).
    CHECK(selective.tasks[static_cast<std::size_t>(rc)].cost_cycles < t.cost_cycles);
    ++checked;
  }
  CHECK(checked > 0);
  // Between none and full: in time, and in the activations the first stage holds.
  const auto stash_peak = [](const TaskGraph& g) {
    return evaluate(test::only_buffers(g, BufferKind::stash)).peak_memory_bytes[0];
  };
  CHECK(evaluate(none).iteration_cycles < evaluate(selective).iteration_cycles);
  CHECK(evaluate(selective).iteration_cycles < evaluate(full).iteration_cycles);
  CHECK(stash_peak(full) < stash_peak(selective));
  CHECK(stash_peak(selective) < stash_peak(none));
  // Networks with no attention keep every stash: the same graph as without recomputation.
  GraphConfig cnn = test::graph_config("lenet5", "1f1b", "h100", 2, 4, 2);
  const TaskGraph plain = make_graph(cnn);
  cnn.params.push_back("recompute=selective");
  const TaskGraph cnn_selective = make_graph(cnn);
  CHECK(cnn_selective.tasks.size() == plain.tasks.size());
  CHECK(evaluate(cnn_selective).total_cycles == evaluate(plain).total_cycles);
  CHECK(evaluate(cnn_selective).peak_memory_bytes == evaluate(plain).peak_memory_bytes);
}
