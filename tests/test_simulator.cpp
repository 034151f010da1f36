// The SystemC simulator against the analytic evaluator (equal where nothing contends), link
// contention against closed forms, deadlock and out-of-memory errors, many runs in one process.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <random>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/summary.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/sim/simulator.hpp"
#include "schedule_test_helpers.hpp"
#include "wait_loss_graph.hpp"

using namespace pipetwin;

namespace {

TaskGraph two_processor_graph() {
  TaskGraph g;
  g.schedule = "handmade";
  g.model = "none";
  g.hardware = "none";
  g.processors = {{"p0", 1000, 0}, {"p1", 1000, 0}};
  return g;
}

Task compute(std::int32_t id, std::int32_t processor, std::int32_t order, std::int64_t cost,
             std::vector<std::int32_t> deps) {
  return test::processor_task(id, processor, order, cost, std::move(deps), 0);  // nothing a wait costs
}

Task transfer(std::int32_t id, std::int32_t link, std::int32_t order, std::int64_t cost,
              std::vector<std::int32_t> deps) {
  Task t = compute(id, link, order, cost, std::move(deps));
  t.kind = TaskKind::X;
  t.placement = Placement::link;
  return t;
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4;  // 4 KiB pages
}

}  // namespace

TEST_CASE("the simulator equals the evaluator where nothing contends: schedules x P = 1..9 x three networks") {
  int compared = 0, contended = 0;
  for (const auto& name : schedule_names()) {
    for (const auto& model : test::conformance_models()) {
      for (const std::string hardware : {"h100", "unit"}) {
        for (int P = 1; P <= 9; ++P) {
          const GraphConfig config = test::conformance_config(name, model, hardware, P);
          CAPTURE(name);
          CAPTURE(model);
          CAPTURE(hardware);
          CAPTURE(P);
          const TaskGraph g = make_graph(config);
          const auto expected = evaluate_times(g);
          const auto simulated = simulate_times(g);
          if (test::transfers_overlap_on_a_medium(g, expected)) {
            ++contended;
            // Contention can only delay.
            std::int64_t expected_total = 0, simulated_total = 0;
            for (std::size_t i = 0; i < expected.size(); ++i) {
              expected_total = std::max(expected_total, expected[i].end_cycles);
              simulated_total = std::max(simulated_total, simulated[i].end_cycles);
            }
            CHECK(simulated_total >= expected_total);
            continue;
          }
          ++compared;
          bool equal = true;
          for (std::size_t i = 0; i < expected.size() && equal; ++i) {
            equal = expected[i].start_cycles == simulated[i].start_cycles &&
                    expected[i].end_cycles == simulated[i].end_cycles;
          }
          CHECK(equal);
        }
      }
    }
  }
  MESSAGE("compared cycle for cycle: " << compared << ", with contending transfers: " << contended);
  CHECK(compared >= 9 * 3 * 2 * 4 * 9 / 10);  // nearly all configurations are contention-free
}

TEST_CASE("the simulator equals the evaluator on 200 random contention-free task graphs") {
  std::mt19937 rng(1234), waits_rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    TaskGraph g = two_processor_graph();
    const int processors = std::uniform_int_distribution<int>(1, 4)(rng);
    g.processors.clear();
    for (int p = 0; p < processors; ++p) g.processors.push_back({"p" + std::to_string(p), 1 << 30, 0});
    const int tasks = std::uniform_int_distribution<int>(1, 80)(rng);
    std::vector<std::int32_t> next_order(processors, 0);
    std::vector<std::int32_t> link_orders;  // per link: its next transfer's order
    for (int i = 0; i < tasks; ++i) {
      // Dependencies only on earlier tasks, and processor orders in creation order: acyclic.
      std::vector<std::int32_t> deps;
      for (int d = 0; d < i; ++d) {
        if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) deps.push_back(d);
      }
      const std::int64_t cost = std::uniform_int_distribution<int>(0, 20)(rng);
      if (processors > 1 && i > 0 && std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
        // A transfer on an in-order link of its own medium, with a latency (sometimes with a wake
        // and a delivery part), or the next on such a link: one in service at a time, no contention.
        std::int32_t link = static_cast<std::int32_t>(g.links.size());
        if (link > 0 && std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
          link = std::uniform_int_distribution<std::int32_t>(0, link - 1)(rng);
        } else {
          LinkInfo info{"l" + std::to_string(link), 0, processors - 1, 1.0, std::uniform_int_distribution<int>(0, 6)(rng), ""};
          if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
            info.wake_cycles = std::uniform_int_distribution<std::int64_t>(0, info.latency_cycles / 2)(rng);
            info.delivery_cycles = std::uniform_int_distribution<std::int64_t>(0, info.latency_cycles - info.wake_cycles)(rng);
          }
          g.links.push_back(info);
          link_orders.push_back(0);
        }
        g.tasks.push_back(transfer(i, link, link_orders[static_cast<std::size_t>(link)]++,
                                   cost + g.links[static_cast<std::size_t>(link)].latency_cycles, deps));
      } else {
        const int p = std::uniform_int_distribution<int>(0, processors - 1)(rng);
        g.tasks.push_back(compute(i, p, next_order[p]++, cost, deps));
      }
    }
    // Half the graphs with a wait loss (its own generator, so that the graphs are those of before).
    if (std::uniform_int_distribution<int>(0, 1)(waits_rng) == 0) {
      g.wait_loss = {{std::uniform_int_distribution<std::int64_t>(1, 10)(waits_rng), 0.5}, {20, 2.0}};
      for (auto& t : g.tasks) {
        if (t.placement == Placement::processor) t.wait_exposed_bytes = std::uniform_int_distribution<int>(0, 10)(waits_rng);
      }
    }
    const auto expected = evaluate_times(g);
    const auto simulated = simulate_times(g);
    REQUIRE(expected.size() == simulated.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(expected[i].start_cycles == simulated[i].start_cycles);
      CHECK(expected[i].end_cycles == simulated[i].end_cycles);
    }
  }
}

TEST_CASE("the simulator charges a task for its processor's wait before it, as the evaluator does") {
  const TaskGraph g = test::waiting_graph();
  const auto times = simulate_times(g);
  // Worked out by hand in test_wait_loss.cpp: C 50..67 after a wait of 35, E 67..87 after 17.
  CHECK(times[2].start_cycles == 50);
  CHECK(times[2].end_cycles == 67);
  CHECK(times[4].start_cycles == 67);
  CHECK(times[4].end_cycles == 87);
  CHECK(times[3].end_cycles == 50);  // no wait before D: nothing, whatever its bytes
}

TEST_CASE("an in-order link's wake and delivery parts: a queued transfer skips the wake, the reader's wake holds no link") {
  // Link latency 30 = wake 8 + round trip 12 + delivery 10; each transfer 20 cycles of bytes.
  const std::int64_t latency = 30, wake = 8, delivery = 10, cost = latency + 20;
  TaskGraph g = two_processor_graph();
  g.links = {{"p0->p1", 0, 1, 1.0, latency, ""}};
  g.links[0].wake_cycles = wake;
  g.links[0].delivery_cycles = delivery;
  // p0: A (10 cycles), then B until cycle 200; X1 and X2 carry A, X3 carries B; p1 reads each.
  g.tasks = {compute(0, 0, 0, 10, {}),          compute(1, 0, 1, 190, {}),        transfer(2, 0, 0, cost, {0}),
             transfer(3, 0, 1, cost, {0}),      transfer(4, 0, 2, cost, {1}),     compute(5, 1, 0, 1, {2}),
             compute(6, 1, 1, 1, {3}),          compute(7, 1, 2, 1, {4})};
  REQUIRE(structural_problems(g).empty());
  // X1: the link waited for it, the whole cost: 10..60, the link free at 50 (the reader's wake after).
  // X2: ready at 10, queued behind X1: starts when the link is free, without the wake: 50..92.
  // X3: ready at 200, the link idle since 82: its thread slept, the whole cost again: 200..250.
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {{10, 60}, {50, 92}, {200, 250}};
  for (const auto& times : {evaluate_times(g), simulate_times(g)}) {
    for (std::size_t x = 0; x < 3; ++x) {
      CAPTURE(x);
      CHECK(times[2 + x].start_cycles == expected[x].first);
      CHECK(times[2 + x].end_cycles == expected[x].second);
      CHECK(times[5 + x].start_cycles == expected[x].second);
    }
  }
  // Without the parts, the latency holds the link whole: X2 waits for X1's end, 60..110.
  g.links[0].wake_cycles = g.links[0].delivery_cycles = 0;
  for (const auto& times : {evaluate_times(g), simulate_times(g)}) {
    CHECK(times[3].start_cycles == 60);
    CHECK(times[3].end_cycles == 110);
  }
  // Parts larger than the latency are not a graph.
  g.links[0].wake_cycles = 25;
  g.links[0].delivery_cycles = 10;
  CHECK_FALSE(structural_problems(g).empty());
}

TEST_CASE("two transfers sharing a link take 2N / bandwidth, on separate links N / bandwidth, one after the other N each in order") {
  const double bytes_per_cycle = 64;
  const std::int64_t n_bytes = 1 << 20, packet_bytes = 4096;
  const std::int64_t alone = n_bytes / static_cast<std::int64_t>(bytes_per_cycle);
  const double packet_cycles = static_cast<double>(packet_bytes) / bytes_per_cycle;
  SUBCASE("shared") {
    TaskGraph g = two_processor_graph();
    g.links = {{"p0->p1", 0, 1, bytes_per_cycle, 0, "", LinkPolicy::shared}};
    g.tasks = {compute(0, 0, 0, 10, {}), transfer(1, 0, 0, alone, {0}), transfer(2, 0, 1, alone, {0})};
    const auto times = simulate_times(g);
    for (const int x : {1, 2}) {
      const double took = static_cast<double>(times[x].end_cycles - times[x].start_cycles);
      CHECK(took == doctest::Approx(2.0 * static_cast<double>(n_bytes) / bytes_per_cycle).epsilon(packet_cycles / (2.0 * alone)));
    }
    const Result r = simulate(g);
    CHECK(r.link_busy_cycles[0] == times[2].end_cycles - 10);
  }
  SUBCASE("separate links") {
    TaskGraph g = two_processor_graph();
    g.links = {{"a", 0, 1, bytes_per_cycle, 0, ""}, {"b", 0, 1, bytes_per_cycle, 0, ""}};
    g.tasks = {compute(0, 0, 0, 10, {}), transfer(1, 0, 0, alone, {0}), transfer(2, 1, 0, alone, {0})};
    const auto times = simulate_times(g);
    CHECK(times[1].end_cycles - times[1].start_cycles == alone);
    CHECK(times[2].end_cycles - times[2].start_cycles == alone);
  }
  SUBCASE("separate links of one shared group share it") {
    TaskGraph g = two_processor_graph();
    g.links = {{"a", 0, 1, bytes_per_cycle, 0, "bus"}, {"b", 1, 0, bytes_per_cycle, 0, "bus"}};
    g.tasks = {compute(0, 0, 0, 10, {}), transfer(1, 0, 0, alone, {0}), transfer(2, 1, 0, alone, {0})};
    const auto times = simulate_times(g);
    CHECK(times[2].end_cycles - times[2].start_cycles == 2 * alone);
  }
  SUBCASE("in order (the default policy): the second starts when the first ends") {
    TaskGraph g = two_processor_graph();
    g.links = {{"p0->p1", 0, 1, bytes_per_cycle, 0, ""}};
    REQUIRE(g.links[0].policy == LinkPolicy::in_order);
    g.tasks = {compute(0, 0, 0, 10, {}), transfer(1, 0, 0, alone, {0}), transfer(2, 0, 1, alone, {0})};
    const auto times = simulate_times(g);
    CHECK(times[1].start_cycles == 10);
    CHECK(times[1].end_cycles == 10 + alone);
    CHECK(times[2].start_cycles == times[1].end_cycles);
    CHECK(times[2].end_cycles == 10 + 2 * alone);
  }
  SUBCASE("a transfer arriving halfway shares the rest") {
    TaskGraph g = two_processor_graph();
    g.links = {{"p0->p1", 0, 1, bytes_per_cycle, 0, "", LinkPolicy::shared}};
    g.tasks = {compute(0, 0, 0, 10, {}), compute(1, 0, 1, alone / 2, {}), transfer(2, 0, 0, alone, {0}),
               transfer(3, 0, 1, alone, {1})};
    const auto times = simulate_times(g);
    // The first has half left when the second arrives: both then run at half speed.
    CHECK(times[2].end_cycles == 10 + alone / 2 + alone);
    CHECK(times[3].end_cycles == times[2].end_cycles + alone / 2);
  }
}

TEST_CASE("a graph whose processor orders wait on each other in a circle ends in a deadlock error") {
  TaskGraph g = two_processor_graph();
  // p0 runs A then B, p1 runs C then D; A needs D and C needs B.
  g.tasks = {compute(0, 0, 0, 5, {3}), compute(1, 0, 1, 5, {}), compute(2, 1, 0, 5, {1}),
             compute(3, 1, 1, 5, {})};
  CHECK_THROWS_WITH_AS(simulate_times(g),
                       "deadlock: 4 of 4 tasks never ran: p0 is stuck before task 0 F() on p0, which "
                       "waits for task 3 F() on p1; p1 is stuck before task 2 F() on p1, which waits "
                       "for task 1 F() on p0",
                       Error);
}

TEST_CASE("out of memory names the task that crossed the capacity") {
  GraphConfig config = test::graph_config("resnet20", "gpipe", "h100", 2, 8, 1);
  // Stashes alone, with capacity for 2.5 microbatches of stage 0's activations: the third
  // forward of processor 0 crosses it.
  TaskGraph g = test::only_buffers(make_graph(config), BufferKind::stash);
  std::int64_t stash = 0;
  for (const auto& t : g.tasks) {
    if (t.kind == TaskKind::F && t.resource == 0) stash = test::buffer_bytes(g, BufferKind::stash, t.id);
  }
  g.processors[0].memory_capacity_bytes = 5 * stash / 2;
  const Result r = simulate(g);
  REQUIRE(r.out_of_memory.size() == 1);
  const Task& culprit = g.tasks[r.out_of_memory[0].task];
  CHECK(culprit.kind == TaskKind::F);
  CHECK(culprit.resource == 0);
  CHECK(culprit.microbatch == 2);
  CHECK(r.out_of_memory[0].live_bytes == 3 * stash);
  CHECK(describe_out_of_memory(g, r.out_of_memory[0]).find("out of memory on p0") == 0);
}

TEST_CASE("1000 simulations in one process: identical results, flat memory") {
  const GraphConfig config = test::graph_config("resnet20", "pipedream", "h100", 4, 4, 2);
  const TaskGraph g = make_graph(config);
  const auto first = simulate_times(g);
  long resident_after_warmup = 0;
  bool identical = true;
  for (int run = 1; run < 1000; ++run) {
    const auto again = simulate_times(g);
    for (std::size_t i = 0; i < first.size() && identical; ++i) {
      identical = first[i].start_cycles == again[i].start_cycles && first[i].end_cycles == again[i].end_cycles;
    }
    if (run == 100) resident_after_warmup = resident_kib();
  }
  CHECK(identical);
  const long growth = resident_kib() - resident_after_warmup;
  MESSAGE("resident memory growth over runs 100..1000: " << growth << " KiB");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine, so resident size says nothing here;
  // LeakSanitizer checks for leaks at exit instead.
  MESSAGE("flat-memory check skipped under AddressSanitizer");
#else
  CHECK(growth < 2048);
#endif
}

TEST_CASE("processors on one memory system share its bandwidth for memory-bound work") {
  auto graph = [](std::int64_t memory_cycles, bool shared) {
    TaskGraph g = two_processor_graph();
    if (shared) g.processors[0].memory_system = g.processors[1].memory_system = 0;
    g.tasks = {compute(0, 0, 0, 100, {}), compute(1, 1, 0, 100, {})};
    g.tasks[0].memory_cycles = g.tasks[1].memory_cycles = memory_cycles;
    return g;
  };
  // Memory-bound (traffic is the whole cost): together they take twice as long.
  auto times = simulate_times(graph(100, true));
  CHECK(times[0].end_cycles == 200);
  CHECK(times[1].end_cycles == 200);
  // Compute-bound (traffic 30% of the cost): sharing the bandwidth costs nothing.
  times = simulate_times(graph(30, true));
  CHECK(times[0].end_cycles == 100);
  CHECK(times[1].end_cycles == 100);
  // Separate memory systems: no interference.
  times = simulate_times(graph(100, false));
  CHECK(times[1].end_cycles == 100);
  // SM partitions of one H100 in a pipeline: never faster than the contention-free evaluator.
  const GraphConfig config = test::graph_config("resnet20", "1f1b", "h100-sm", 4, 8, 2);
  const TaskGraph g = make_graph(config);
  CHECK(g.processors[3].memory_system == 0);
  std::int64_t evaluated = 0, simulated = 0;
  for (const auto& t : evaluate_times(g)) evaluated = std::max(evaluated, t.end_cycles);
  for (const auto& t : simulate_times(g)) simulated = std::max(simulated, t.end_cycles);
  CHECK(simulated >= evaluated);
}

TEST_CASE("offload and reload move memory between a processor and host memory") {
  TaskGraph g = two_processor_graph();
  g.processors = {{"p0", 1000, 100, -1}};
  g.host_memory_capacity_bytes = 1000;
  g.links = {{"p0->host", 0, kHost, 10.0, 2, ""}, {"host->p0", kHost, 0, 10.0, 2, ""}};
  Task forward = compute(0, 0, 0, 10, {});
  Task offload = transfer(1, 0, 0, 2 + 30, {0});
  offload.deps[0] = {0, Carries::stash, 300};
  offload.kind = TaskKind::OFF;
  offload.bytes = 300;
  Task other = compute(2, 0, 1, 50, {0});
  Task reload = transfer(3, 1, 0, 2 + 30, {1, 2});
  reload.deps[0] = {1, Carries::stash, 300};
  reload.kind = TaskKind::ON;
  reload.bytes = 300;
  Task backward = compute(4, 0, 2, 20, {3});
  backward.deps[0] = {3, Carries::stash, 300};
  backward.kind = TaskKind::B;
  g.tasks = {forward, offload, other, reload, backward};
  // The activations the forward keeps: on the device until the offload ends, in host memory from
  // the offload's start to the reload's end, on the device again from the reload's start until
  // the backward ends; and 400 bytes the other task holds while it runs.
  const BufferName stash{BufferKind::stash, 0, -1};
  g.buffers = {{stash, 0, 300, 0, {1}}, {stash, kHost, 300, 1, {3}}, {stash, 0, 300, 3, {4}},
               {{BufferKind::output, 2, -1}, 0, 400, 2, {2}}};
  REQUIRE(validate(g).empty());
  const auto simulated = simulate_times(g);
  const auto evaluated = evaluate_times(g);
  for (std::size_t i = 0; i < g.tasks.size(); ++i) CHECK(simulated[i].end_cycles == evaluated[i].end_cycles);
  const Result r = simulate(g);
  // F 0-10, OFF 10-42, other 10-60 (the activations are gone from 42 on), ON 60-92, B 92-112.
  CHECK(r.tasks[4].end_cycles == 112);
  CHECK(r.peak_memory_bytes[0] == 100 + 300 + 400);  // static + activations + other, 10..42
  CHECK(r.host_peak_memory_bytes == 300);
  CHECK(r.out_of_memory.empty());

  g.host_memory_capacity_bytes = 200;
  const Result full = simulate(g);
  REQUIRE(full.out_of_memory.size() == 1);
  CHECK(full.out_of_memory[0].processor == kHost);
  CHECK(full.out_of_memory[0].task == 1);
  CHECK(describe_out_of_memory(g, full.out_of_memory[0]).find("out of memory on host memory at cycle 10") == 0);

  g.tasks[1].resource = 1;  // an offload over the link *from* host memory
  CHECK(validate(g).front().find("an offload must go over a link to host memory") != std::string::npos);
}

TEST_CASE("simulated memory: gpipe's first stage holds M microbatches of activations, 1f1b min(M, P)") {
  for (int P = 1; P <= 5; ++P) {
    for (const int M : {1, 2, 3, 8}) {
      for (const std::string schedule : {"gpipe", "1f1b"}) {
        GraphConfig config = test::graph_config("resnet20", schedule, "h100", P, M, 2);
        config.params = {"batch=" + std::to_string(8 * M)};
        const TaskGraph g = test::only_buffers(make_graph(config), BufferKind::stash);
        // One microbatch's activations on stage 0: what each of its forwards stashes.
        std::int64_t stash = 0;
        for (const auto& t : g.tasks) {
          if (t.kind == TaskKind::F && t.stage == 0) stash = test::buffer_bytes(g, BufferKind::stash, t.id);
        }
        CAPTURE(schedule);
        CAPTURE(P);
        CAPTURE(M);
        const int in_flight = schedule == "gpipe" ? M : std::min(M, P);
        CHECK(simulate(g).peak_memory_bytes[0] == in_flight * stash);
      }
    }
  }
}
