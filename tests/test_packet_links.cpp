// Packet-level links against the fluid model and closed forms: equal where nothing contends
// (every schedule's transfers, each alone on its link), round robin within one packet of the fair
// share when two transfers share a medium, and credit-based flow control that stalls a lone
// transfer exactly as its round trip says.
#include <doctest/doctest.h>

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/sim/simulator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

SimOptions packets(std::int64_t bytes, std::int32_t credits = 0) {
  SimOptions options;
  options.packet_links = true;
  options.packet_bytes = bytes;
  options.packet_credits = credits;
  return options;
}

std::vector<std::int64_t> ends(const std::vector<TaskTiming>& times) {
  std::vector<std::int64_t> out;
  for (const auto& t : times) out.push_back(t.end_cycles);
  return out;
}

// Two processors; one link (or two sharing a medium) of 1 byte per cycle and `latency`.
TaskGraph link_graph(int links, std::int64_t latency, const std::vector<std::int64_t>& transfer_bytes,
                     LinkPolicy policy = LinkPolicy::shared) {
  TaskGraph g;
  g.schedule = "handmade";
  g.model = "none";
  g.hardware = "none";
  g.processors = {{"p0", 1 << 30, 0}, {"p1", 1 << 30, 0}};
  for (int k = 0; k < links; ++k) {
    g.links.push_back({"l" + std::to_string(k), 0, 1, 1.0, latency, links > 1 ? "bus" : "", policy});
  }
  for (std::size_t i = 0; i < transfer_bytes.size(); ++i) {
    Task t;
    t.id = static_cast<std::int32_t>(i);
    t.kind = TaskKind::X;
    t.placement = Placement::link;
    t.resource = static_cast<std::int32_t>(i % static_cast<std::size_t>(links));
    t.order = static_cast<std::int32_t>(i / static_cast<std::size_t>(links));
    t.bytes = transfer_bytes[i];
    t.cost_cycles = latency + transfer_bytes[i];
    g.tasks.push_back(t);
  }
  return g;
}

}  // namespace

TEST_CASE("packet links equal the fluid model wherever nothing contends") {
  int compared = 0;
  for (const std::string model : {"lenet5", "resnet20"}) {
    for (const std::string schedule : {"gpipe", "1f1b", "pipedream", "layerpipe", "zb-h1", "interleaved-1f1b"}) {
      for (int p = 2; p <= 4; ++p) {
        TaskGraph g;
        try {
          g = make_graph(test::graph_config(model, schedule, "h100", p, 4, 2));
        } catch (const Error&) {
          continue;  // a schedule that cannot take this P
        }
        const auto fluid = ends(simulate_times(g));
        if (fluid != ends(evaluate_times(g))) continue;  // something contends: not this test's case
        CAPTURE(model);
        CAPTURE(schedule);
        CAPTURE(p);
        CHECK(ends(simulate_times(g, packets(4096))) == fluid);
        CHECK(ends(simulate_times(g, packets(1 << 20))) == fluid);
        ++compared;
      }
    }
  }
  CHECK(compared >= 20);
}

TEST_CASE("two transfers on one medium: packets round robin, within a packet of the fair share") {
  // 4 packets of 4096 bytes each at 1 byte/cycle, latency 5, both admitted at 0.
  const TaskGraph g = link_graph(2, 5, {16384, 16384});
  const auto fluid = ends(simulate_times(g));
  CHECK(fluid == std::vector<std::int64_t>{5 + 32768, 5 + 32768});  // equal shares of the bandwidth
  // Packets alternate A B A B ...: A's last leaves at 7 x 4096, B's at 8 x 4096; each arrives 5 later.
  const auto packet = ends(simulate_times(g, packets(4096)));
  CHECK(packet == std::vector<std::int64_t>{7 * 4096 + 5, 8 * 4096 + 5});
  // The same transfers on an in-order link: one after the other, equal in both models.
  const TaskGraph in_order = link_graph(1, 5, {16384, 16384}, LinkPolicy::in_order);
  CHECK(ends(simulate_times(in_order, packets(4096))) == ends(simulate_times(in_order)));
  CHECK(ends(simulate_times(in_order)) == std::vector<std::int64_t>{16389, 2 * 16389});
}

TEST_CASE("packets cut through a route of two hops: the next hop forwards each packet as it arrives") {
  // p0 -> p1 -> p2, 1 byte/cycle and latency 10 per hop, 4000 bytes: hop 2 depends on hop 1.
  TaskGraph g = link_graph(1, 10, {4000});
  g.processors.push_back({"p2", 1 << 30, 0});
  g.links.push_back({"l1", 1, 2, 1.0, 10, "", LinkPolicy::in_order});
  Task hop = g.tasks[0];
  hop.id = 1;
  hop.resource = 1;
  hop.order = 0;
  hop.deps = {{0, Carries::activation, 4000}};
  g.tasks.push_back(hop);
  // Fluid (store and forward): 4010 per hop.
  CHECK(ends(simulate_times(g)) == std::vector<std::int64_t>{4010, 8020});
  // Packets of 1000: hop 1's arrive at 1010, 2010, 3010, 4010; hop 2 starts at the first and sends
  // each as it arrives, its last from 4010 to 5010, arriving at 5020 = 4000 + 1000 + 2 x 10.
  const auto times = simulate_times(g, packets(1000));
  CHECK(times[1].start_cycles == 1010);
  CHECK(ends(times) == std::vector<std::int64_t>{4010, 5020});
  // One packet per transfer: store and forward, as the fluid model.
  CHECK(ends(simulate_times(g, packets(4000))) == std::vector<std::int64_t>{4010, 8020});
}

TEST_CASE("on chain topologies, routes cut through and never end later than store and forward") {
  int compared = 0, faster = 0;
  for (const std::string schedule : {"1f1b", "interleaved-1f1b", "layerpipe"}) {
    GraphConfig config = test::graph_config("resnet20", schedule, "v100", 4, 4, 2);
    config.params = {"topology=chain"};
    const TaskGraph g = make_graph(config);
    const auto fluid = ends(simulate_times(g));
    if (fluid != ends(evaluate_times(g))) continue;
    CAPTURE(schedule);
    // Packets as large as any transfer: every route stores and forwards, as the fluid model.
    CHECK(ends(simulate_times(g, packets(std::int64_t{1} << 40))) == fluid);
    const auto cut = ends(simulate_times(g, packets(65536)));
    const auto last = [](const std::vector<std::int64_t>& e) { return *std::max_element(e.begin(), e.end()); };
    CHECK(last(cut) <= last(fluid));
    if (last(cut) < last(fluid)) ++faster;  // layerpipe's transfers between processors two hops apart
    ++compared;
  }
  CHECK(compared == 3);
  CHECK(faster >= 1);
  // Free transfers (the unit model): every packet of a route arrives at once, at time 0 of its hop;
  // the next hop is still made ready exactly once.
  GraphConfig unit = test::graph_config("lenet5", "layerpipe", "unit", 4, 4, 2);
  unit.params = {"topology=chain"};
  const TaskGraph free_links = make_graph(unit);
  CHECK(ends(simulate_times(free_links, packets(1000))) == ends(simulate_times(free_links)));
}

TEST_CASE("a switch: input ports per sender, output queues per receiver, virtual cut-through") {
  // Four processors on one switch (1 byte/cycle, latency 5); transfers of 4 packets of 1000 bytes
  // with buffers enough that flow control never holds them back.
  auto switch_graph = [](const std::vector<std::pair<int, int>>& pairs) {
    TaskGraph g = link_graph(1, 5, {});
    g.links.clear();
    g.processors = {{"p0", 1 << 30, 0}, {"p1", 1 << 30, 0}, {"p2", 1 << 30, 0}, {"p3", 1 << 30, 0}};
    for (const auto& [src, dst] : pairs) {
      LinkInfo link{"p" + std::to_string(src) + "->p" + std::to_string(dst), src, dst, 1.0, 5, "switch", LinkPolicy::shared};
      link.switched = true;
      g.links.push_back(link);
      Task t;
      t.id = static_cast<std::int32_t>(g.tasks.size());
      t.kind = TaskKind::X;
      t.placement = Placement::link;
      t.resource = t.id;
      t.bytes = 4000;
      t.cost_cycles = 5 + 4000;
      g.tasks.push_back(t);
    }
    return g;
  };
  const SimOptions options = packets(1000, 1000);
  // Two pairs apart: nothing shared in the switch, each at full rate (the fluid model, one shared
  // medium for the switch, halves both).
  const TaskGraph apart = switch_graph({{0, 1}, {2, 3}});
  CHECK(ends(simulate_times(apart, options)) == std::vector<std::int64_t>{4005, 4005});
  CHECK(ends(simulate_times(apart)) == std::vector<std::int64_t>{8005, 8005});
  // Two senders to one receiver: its output queue alternates them, A0 B0 A1 B1 ...
  const TaskGraph incast = switch_graph({{0, 2}, {1, 2}});
  CHECK(ends(simulate_times(incast, options)) == std::vector<std::int64_t>{7 * 1000 + 5, 8 * 1000 + 5});
  // One sender to two receivers: its input port alternates them.
  const TaskGraph fan_out = switch_graph({{0, 1}, {0, 2}});
  CHECK(ends(simulate_times(fan_out, options)) == std::vector<std::int64_t>{7 * 1000 + 5, 8 * 1000 + 5});
  // Graphs of the switch topology mark their links switched, and where nothing contends the
  // packet switch equals the fluid model.
  GraphConfig config = test::graph_config("resnet20", "1f1b", "h100", 4, 4, 2);
  config.params = {"topology=switch"};
  const TaskGraph g = make_graph(config);
  REQUIRE_FALSE(g.links.empty());
  CHECK(g.links.front().switched);
  const auto fluid = ends(simulate_times(g));
  if (fluid == ends(evaluate_times(g))) CHECK(ends(simulate_times(g, packets(65536))) == fluid);
}

TEST_CASE("credit-based flow control holds a lone transfer to its credits per round trip") {
  // 5 packets of 1000 bytes, latency 100: a credit returns 2 x 100 after its packet left.
  const TaskGraph g = link_graph(1, 100, {5000});
  CHECK(ends(simulate_times(g)).front() == 5100);
  // One buffer: a packet every 1000 + 200 cycles; the last leaves at 4 x 1200 + 1000, arrives 100 later.
  CHECK(ends(simulate_times(g, packets(1000, 1))).front() == 4 * 1200 + 1000 + 100);
  // Two buffers cover the round trip (2 x 1000 >= 1200): full rate, as the fluid model.
  CHECK(ends(simulate_times(g, packets(1000, 2))).front() == 5100);
  // Automatic credits cover it too.
  CHECK(ends(simulate_times(g, packets(1000))).front() == 5100);
  CHECK_THROWS_WITH_AS(simulate_times(g, packets(0)), doctest::Contains("at least 1 byte"), Error);
}
