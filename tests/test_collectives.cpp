// Data and tensor parallelism: the all-reduces' times against their closed forms (ring,
// hierarchical, across nodes through NICs, and with NICs shared), both predicting engines; the
// replicas' compute against the single pipeline's; the graph's JSON; bad configurations; a
// tensor-parallel rank's sizes (Korthikanti et al.) and its all-reduces.
#include <doctest/doctest.h>

#include <cmath>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/gpu_kernels.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/layer.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/graph_io.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/sim/simulator.hpp"

using namespace pipetwin;

namespace {

// Two dense layers of 1024 x 1024 (4 MiB of fp32 weights each): gradients worth moving.
const std::vector<std::string> kWideMlp = {"widths=1024,1024,1024", "batch=8"};

// `replicas` data-parallel replicas of a one-processor sequential pipeline on h100, nodes of
// `per_node` GPUs with `nics` NICs each.
GraphConfig replicas_config(int replicas, int per_node, int nics, const std::string& algorithm) {
  GraphConfig config = graph_config("mlp", "sequential", "h100", replicas, 1, 1);
  config.params = kWideMlp;
  config.params.push_back("dp=" + std::to_string(replicas));
  config.params.push_back("allreduce=" + algorithm);
  config.params.push_back("processors_per_node=" + std::to_string(per_node));
  config.params.push_back("nics_per_node=" + std::to_string(nics));
  return config;
}

// The cycles from the end of replica 0's backward to the start of its update: the all-reduce.
double all_reduce_cycles(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::int64_t backward_end = -1, update_start = -1;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::processor || t.resource != 0) continue;
    if (t.kind == TaskKind::B) backward_end = times[static_cast<std::size_t>(t.id)].end_cycles;
    if (t.kind == TaskKind::U) update_start = times[static_cast<std::size_t>(t.id)].start_cycles;
  }
  REQUIRE(backward_end >= 0);
  REQUIRE(update_start >= 0);
  return static_cast<double>(update_start - backward_end);
}

// The gradient bytes each rank all-reduces: the network's parameters, from the model itself.
double gradient_bytes() {
  Params params;
  params.set("widths", "1024,1024,1024");
  params.set("batch", "8");
  const Network net = make_network("mlp", params);
  return static_cast<double>(net.layer_sum(0, static_cast<int>(net.layers.size()) - 1, &Layer::param_bytes));
}

// A ring all-reduce's closed form, in cycles: 2(n-1)/n S/B + 2(n-1) alpha.
double ring_cycles(int n, double bytes, const LinkSpec& link, double clock_hz) {
  return (2.0 * (n - 1) / n * bytes / link.bytes_per_s + 2.0 * (n - 1) * link.latency_s) * clock_hz;
}

bool same_times(const std::vector<TaskTiming>& a, const std::vector<TaskTiming>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].start_cycles != b[i].start_cycles || a[i].end_cycles != b[i].end_cycles) return false;
  }
  return true;
}

// Our steps round up to whole cycles (latency and bandwidth apart) and pieces to whole bytes.
void check_close(double got, double expected, int steps) {
  INFO("got " << got << " cycles, closed form " << expected);
  CHECK(std::abs(got - expected) <= 2.0 * steps + 1);
}

}  // namespace

TEST_CASE("a ring all-reduce inside one node takes 2(n-1)/n S/B + 2(n-1) alpha on both engines") {
  const HardwareProfile h100 = make_hardware("h100", Params());
  for (const int n : {2, 4, 8}) {
    const TaskGraph g = make_graph(replicas_config(n, 8, 8, "ring"));
    REQUIRE(validate(g).empty());
    REQUIRE(g.collectives.size() == 1);
    CHECK(g.collectives[0].processors.size() == static_cast<std::size_t>(n));
    const double expected = ring_cycles(n, gradient_bytes(), h100.link, h100.clock_hz());
    INFO("n = " << n);
    check_close(all_reduce_cycles(g, evaluate_times(g)), expected, 2 * (n - 1));
    check_close(all_reduce_cycles(g, simulate_times(g)), expected, 2 * (n - 1));
  }
}

TEST_CASE("a ring across nodes runs at its slowest link: the NIC") {
  const HardwareProfile h100 = make_hardware("h100", Params());
  const TaskGraph g = make_graph(replicas_config(8, 4, 4, "ring"));  // two nodes of four
  const double expected = ring_cycles(8, gradient_bytes(), h100.cluster.nic, h100.clock_hz());
  check_close(all_reduce_cycles(g, evaluate_times(g)), expected, 14);
  check_close(all_reduce_cycles(g, simulate_times(g)), expected, 14);
}

TEST_CASE("a hierarchical all-reduce: rings in each node around one ring per place across the nodes") {
  const HardwareProfile h100 = make_hardware("h100", Params());
  const double S = gradient_bytes();
  const int per_node = 4, nodes = 2;
  // Reduce-scatter and all-gather inside the node (2(g-1) steps of S/g on NVLink), and an
  // all-reduce of each S/g piece across the nodes (2(m-1) steps of S/(g m) through the NICs).
  const double inside = ring_cycles(per_node, S, h100.link, h100.clock_hz());
  const double across = ring_cycles(nodes, S / per_node, h100.cluster.nic, h100.clock_hz());
  SUBCASE("one NIC per GPU: the rings across the nodes do not meet") {
    const TaskGraph g = make_graph(replicas_config(per_node * nodes, per_node, per_node, "hierarchical"));
    REQUIRE(validate(g).empty());
    CHECK(g.collectives.at(0).algorithm == "hierarchical");
    check_close(all_reduce_cycles(g, evaluate_times(g)), inside + across, 2 * (per_node - 1) + 2 * (nodes - 1));
    check_close(all_reduce_cycles(g, simulate_times(g)), inside + across, 2 * (per_node - 1) + 2 * (nodes - 1));
  }
  SUBCASE("one NIC per node: its four rings share it, so their bandwidth term takes four times as long") {
    const TaskGraph g = make_graph(replicas_config(per_node * nodes, per_node, 1, "hierarchical"));
    REQUIRE(validate(g).empty());
    // The analytic evaluator does not share bandwidth (docs/design.md, "Links"): it still sees
    // the uncontended time. The simulator shares the NIC four ways.
    check_close(all_reduce_cycles(g, evaluate_times(g)), inside + across, 2 * (per_node - 1) + 2 * (nodes - 1));
    const double shared = inside + across + 2.0 * (nodes - 1) * (per_node - 1) * (S / per_node / nodes) /
                                                h100.cluster.nic.bytes_per_s * h100.clock_hz();
    check_close(all_reduce_cycles(g, simulate_times(g)), shared, 2 * (per_node - 1) + 2 * (nodes - 1));
  }
}

TEST_CASE("data-parallel replicas compute as the single pipeline does until their first all-reduce") {
  for (const char* schedule : {"sequential", "gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b"}) {
    INFO(schedule);
    GraphConfig single = graph_config("mlp", schedule, "h100", 2, 4, 2);
    single.params = {"widths=256,256,256,256,256", "batch=16"};
    GraphConfig replicated = single;
    replicated.processors = 6;
    replicated.params.push_back("dp=3");
    const TaskGraph one = make_graph(single);
    const TaskGraph three = make_graph(replicated);
    REQUIRE(validate(three).empty());
    CHECK(three.processor_count() == 6);
    CHECK(three.stages.size() == 3 * one.stages.size());
    CHECK(three.collectives.size() == one.stages.size() * 2);  // per stage and minibatch
    const auto one_times = evaluate_times(one);
    const auto three_times = evaluate_times(three);
    CHECK(same_times(simulate_times(three), three_times));  // nothing shares a medium here
    // Replica r's copy of task i is task i + r x (the pipeline's tasks); before the first update
    // nothing waits for an all-reduce.
    std::int64_t first_update = INT64_MAX;
    for (const auto& t : one.tasks) {
      if (t.kind == TaskKind::U) first_update = std::min(first_update, one_times[static_cast<std::size_t>(t.id)].start_cycles);
    }
    const auto n = one.tasks.size();
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        if (one_times[i].end_cycles >= first_update) continue;
        CHECK(three_times[i + r * n].start_cycles == one_times[i].start_cycles);
      }
    }
    // The replicas take longer than the pipeline alone by at least one all-reduce.
    CHECK(evaluate(three).total_cycles > evaluate(one).total_cycles);
  }
}

TEST_CASE("a data-parallel graph's JSON round-trips with its collectives") {
  GraphConfig config = graph_config("mlp", "1f1b", "h100", 4, 2, 1);
  config.params = {"widths=64,64,64", "batch=8", "dp=2", "allreduce=hierarchical", "processors_per_node=2"};
  const TaskGraph g = make_graph(config);
  const std::string text = graph_to_json(g);
  const TaskGraph back = graph_from_json(text, "g.json");
  CHECK(graph_to_json(back) == text);
  REQUIRE(back.collectives.size() == g.collectives.size());
  CHECK(back.collectives[0].processors == g.collectives[0].processors);
  CHECK(same_times(evaluate_times(back), evaluate_times(g)));
  // PyTorch's schedule CSV is one pipeline's: a replicated graph is refused.
  CHECK_THROWS_WITH_AS(graph_to_torch_csv(g), doctest::Contains("describes one pipeline"), Error);
}

TEST_CASE("data parallelism's bad configurations are clear errors") {
  GraphConfig config = graph_config("mlp", "1f1b", "h100", 6, 2, 1);
  config.params = {"widths=64,64,64", "batch=8", "dp=4"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("6 processors do not divide"), Error);
  config.params.back() = "dp=0";
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("dp must be 1 to 4096"), Error);
  config.params = {"widths=64,64,64", "batch=8", "dp=2", "allreduce=butterfly"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("unknown all-reduce algorithm"), Error);
  config.processors = 6;
  config.params = {"widths=64,64,64", "batch=8", "dp=6", "allreduce=hierarchical", "processors_per_node=4"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("same number of ranks on every node"), Error);
  config.processors = 2;
  config.params = {"widths=64,64,64", "batch=8", "nics_per_node=9", "processors_per_node=8"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("nics_per_node must be 1 to processors_per_node"), Error);
  config.params = {"widths=64,64,64", "batch=8", "nic=ib-hdr", "processors_per_node=0"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("set processors_per_node too"), Error);
  // Asynchronous schedules update per microbatch: no all-reduce before one update per minibatch.
  config = graph_config("mlp", "pipedream", "h100", 4, 2, 1);
  config.params = {"widths=64,64,64", "batch=8", "dp=2"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("unknown parameter"), Error);
}

TEST_CASE("a tensor-parallel transformer block is one rank's share (Korthikanti et al. 2022's sizes)") {
  const std::int64_t s = 512, h = 1024, a = 16, e = 2;
  const TransformerBlockSpec spec{a, 4, false};
  const Layer whole = transformer_block_layer("block", {s, h}, spec, e);
  CHECK(tensor_parallel_layer(whole, 1).parameters == whole.parameters);
  for (const std::int64_t t : {2, 4, 8}) {
    INFO("t = " << t);
    const Layer rank = tensor_parallel_layer(whole, t);
    // Split: QKV, proj, fc1, fc2 weights (12 h^2) and the QKV and fc1 biases (7 h); whole: the
    // proj and fc2 biases and two layer norms (6 h).
    CHECK(rank.parameters == (12 * h * h + 7 * h) / t + 6 * h);
    // Activations per sample without sequence parallelism: s h (10 + 24 / t) + 5 a s^2 / t, in
    // 2-byte units.
    CHECK(rank.stash_bytes == (10 * s * h + 24 * s * h / t + 5 * a * s * s / t) * e / 2);
    CHECK(rank.forward_macs * static_cast<double>(t) == doctest::Approx(whole.forward_macs));
    CHECK(rank.weight_grad_flops * static_cast<double>(t) == doctest::Approx(whole.weight_grad_flops));
  }
  CHECK_THROWS_WITH_AS(tensor_parallel_layer(whole, 3), doctest::Contains("heads (16) to divide"), Error);
  Conv2dSpec spec3x3;
  spec3x3.out_channels = 8;
  const Layer conv = conv2d_layer("conv", {3, 8, 8}, spec3x3, 4);
  CHECK_THROWS_WITH_AS(tensor_parallel_layer(conv, 2), doctest::Contains("cannot be split tensor-parallel"), Error);
}

TEST_CASE("sequence parallelism splits a block's sequence outside the tensor-parallel regions (Korthikanti et al.)") {
  const std::int64_t s = 512, h = 1024, a = 16, e = 2;
  const Layer whole = transformer_block_layer("block", {s, h}, TransformerBlockSpec{a, 4, false}, e);
  for (const std::int64_t t : {2, 4, 8}) {
    INFO("t = " << t);
    const Layer tp = tensor_parallel_layer(whole, t);
    const Layer sp = tensor_parallel_layer(whole, t, TensorSplit::whole, true);
    CHECK(sp.sequence_parallel);
    CHECK_FALSE(tp.sequence_parallel);
    // Activations per sample with sequence parallelism: s h 34 / t + 5 a s^2 / t (2-byte units;
    // Korthikanti et al. 2022, Table 2); the rank's input and output are 1/t of the sequence.
    CHECK(sp.stash_bytes == (34 * s * h / t + 5 * a * s * s / t) * e / 2);
    CHECK(sp.input_bytes == s * h * e / t);
    CHECK(sp.output_bytes == s * h * e / t);
    // The same weights and weight-GEMM work; less element-wise work.
    CHECK(sp.parameters == tp.parameters);
    CHECK(sp.forward_macs == tp.forward_macs);
    CHECK(sp.forward_flops < tp.forward_flops);
    // Its kernels: the layer norms, bias-dropout-adds and residual gradient on 1/t of the tokens;
    // the GEMMs and the attention core as without it.
    for (const TaskKind kind : {TaskKind::F, TaskKind::BA, TaskKind::BW}) {
      const auto with = layer_kernels(sp, kind, 2, e), without = layer_kernels(tp, kind, 2, e);
      REQUIRE(with.size() == without.size());
      for (std::size_t k = 0; k < with.size(); ++k) {
        INFO(with[k].name);
        const bool outside = with[k].name.rfind("layernorm", 0) == 0 || with[k].name.rfind("bias_dropout_add", 0) == 0 ||
                             with[k].name == "residual.dgrad";
        CHECK(with[k].is_gemm == without[k].is_gemm);
        if (with[k].is_gemm) {
          CHECK(with[k].gemm.m * with[k].gemm.n * with[k].gemm.k * with[k].gemm.batch ==
                doctest::Approx(without[k].gemm.m * without[k].gemm.n * without[k].gemm.k * without[k].gemm.batch));
        } else {
          CHECK(with[k].bytes == doctest::Approx(without[k].bytes / (outside ? static_cast<double>(t) : 1.0)));
        }
      }
    }
  }
  // Whole layers are not split, and the graph keeps sp for whoever rebuilds its network.
  CHECK_FALSE(tensor_parallel_layer(whole, 1, TensorSplit::whole, true).sequence_parallel);
  GraphConfig config = graph_config("gpt", "1f1b", "a100", 2, 2, 1);
  config.params = {"layers=2", "hidden=1024", "heads=16", "seq=512", "vocab=1024", "batch=2", "tp=2", "sp=1"};
  TaskGraph recorded = make_graph(config);
  const Network rebuilt = graph_network(recorded);
  CHECK(rebuilt.layers[1].type == "transformer_block");
  CHECK(rebuilt.layers[1].sequence_parallel);
  recorded.parameters["schedule.sp"] = "2";  // a graph file may say anything
  CHECK_THROWS_WITH_AS(graph_network(recorded), "graph parameter schedule.sp must be 0 or 1, got 2", Error);
  config.params = {"sp=1"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("it needs tp > 1"), Error);
  config.params = {"tp=2", "sp=2"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("sp must be 0 (no sequence parallelism) or 1"), Error);
}

TEST_CASE("a tensor-parallel dense pair is Megatron's: column-parallel, then row-parallel with its all-reduce") {
  const Layer fc1 = dense_layer("fc1", {64}, DenseSpec{32}, 4);
  DenseSpec last{10};
  last.loss = true;
  const Layer fc2 = dense_layer("fc2", {32}, last, 4);
  const Layer column = tensor_parallel_layer(fc1, 4, TensorSplit::columns);
  const Layer row = tensor_parallel_layer(fc2, 4, TensorSplit::rows);
  CHECK(column.parameters == (64 * 32 + 32) / 4);  // its rows of W and of the bias
  CHECK(row.parameters == 32 * 10 / 4 + 10);       // its columns of W; the bias whole
  CHECK(column.forward_macs * 4 == doctest::Approx(fc1.forward_macs));
  // The row-parallel layer sums its ranks' outputs in the forward; the column-parallel one its
  // ranks' input gradients in the backward.
  CHECK(tensor_parallel_all_reduces(row, TaskKind::F).size() == 1);
  CHECK(tensor_parallel_all_reduces(row, TaskKind::F)[0].bytes_per_sample == 10 * 4);
  CHECK(tensor_parallel_all_reduces(row, TaskKind::BA).empty());
  CHECK(tensor_parallel_all_reduces(column, TaskKind::F).empty());
  CHECK(tensor_parallel_all_reduces(column, TaskKind::BA)[0].bytes_per_sample == 64 * 4);
  CHECK_THROWS_WITH_AS(tensor_parallel_layer(fc1, 3, TensorSplit::columns), doctest::Contains("output features (32)"), Error);
  CHECK_THROWS_WITH_AS(tensor_parallel_layer(fc2, 2, TensorSplit::columns), doctest::Contains("cannot be column-parallel"), Error);
}

TEST_CASE("tp=t adds the Megatron all-reduces to a block's forward and backward, as rings over NVLink") {
  // Roofline costs (no kernel tiling), so that the split compute is exactly the whole's / t.
  const auto forward_cycles = [](int t, TaskKind kind) {
    GraphConfig config = graph_config("gpt", "sequential", "h100", t, 1, 1);
    config.params = {"layers=2", "hidden=1024", "heads=16", "seq=512", "vocab=1024", "batch=2", "dtype_bytes=2",
                     "precision=bf16", "cost_model=roofline", "tp=" + std::to_string(t)};
    const TaskGraph g = make_graph(config);
    for (const auto& task : g.tasks) {
      if (task.kind == kind) return std::make_pair(task.cost_cycles, g);
    }
    FAIL("no task of that kind");
    return std::make_pair(std::int64_t{0}, g);
  };
  const HardwareProfile h100 = make_hardware("h100", Params());
  const double clock = h100.clock_hz();
  const double activation = 2.0 * 512 * 1024 * 2;  // samples x s x h x 2 bytes
  for (const int t : {2, 4, 8}) {
    INFO("t = " << t);
    const auto [one, g1] = forward_cycles(1, TaskKind::F);
    const auto [split, gt] = forward_cycles(t, TaskKind::F);
    CHECK(gt.processor_count() == 1);  // one tensor-parallel group of t GPUs
    const double ring = 2.0 * (t - 1) * (h100.link.latency_s + activation / t / h100.link.bytes_per_s) * clock;
    // Forward: two all-reduces per block (2 blocks), the embedding's one, the LM head's three of
    // 4 bytes per token; the compute is at least 1/t of the whole's.
    const double all_reduces = 5 * ring + 3 * 2.0 * (t - 1) * (h100.link.latency_s + 2.0 * 512 * 4 / t / h100.link.bytes_per_s) * clock;
    CHECK(static_cast<double>(split) >= all_reduces + static_cast<double>(one) / t - 10);
    CHECK(static_cast<double>(split) <= all_reduces + static_cast<double>(one));
  }
}

TEST_CASE("tp=t on a profile with measured all-reduces (a100) takes each one's time from the table") {
  // The a100 profile carries NCCL's measured all-reduce times for 2 to 8 GPUs; a group of t takes
  // its all-reduces' times from them (interpolated by size; below the smallest size, from the
  // ring's latency at 0 bytes), not from the ring over NVLink.
  const HardwareProfile a100 = make_hardware("a100", Params());
  const auto measured = [&](int t, double bytes) {  // a second reading of the table, by hand
    const auto& points = a100.all_reduce.seconds_by_bytes.at(t);
    double x0 = 0, y0 = 2.0 * (t - 1) * a100.link.latency_s;
    for (const auto& [x1, y1] : points) {
      if (bytes <= x1) return y0 + (y1 - y0) * (bytes - x0) / (x1 - x0);
      x0 = x1;
      y0 = y1;
    }
    FAIL("beyond the table");
    return 0.0;
  };
  const auto forward_cycles = [](int t) {
    GraphConfig config = graph_config("gpt", "sequential", "a100", t, 1, 1);
    config.params = {"layers=2", "hidden=1024", "heads=16", "seq=512", "vocab=1024", "batch=2", "dtype_bytes=2",
                     "precision=bf16", "cost_model=roofline", "tp=" + std::to_string(t)};
    const TaskGraph g = make_graph(config);
    for (const auto& task : g.tasks) {
      if (task.kind == TaskKind::F) return task.cost_cycles;
    }
    FAIL("no forward");
    return std::int64_t{0};
  };
  const double clock = a100.clock_hz();
  const double activation = 2.0 * 512 * 1024 * 2;  // samples x s x h x 2 bytes: 2 MiB, one of the table's sizes
  const std::int64_t one = forward_cycles(1);
  for (const int t : {2, 4, 8}) {
    INFO("t = " << t);
    REQUIRE(a100.all_reduce.covers(t));
    // Two per block (2 blocks) and the embedding's at 2 MiB; the LM head's three of 4 bytes per token.
    const double all_reduces = (5 * measured(t, activation) + 3 * measured(t, 2.0 * 512 * 4)) * clock;
    const double ring = 2.0 * (t - 1) * (a100.link.latency_s + activation / t / a100.link.bytes_per_s) * clock;
    CHECK(all_reduces > 5 * ring);  // NCCL's measured times exceed the ideal ring's at these sizes
    const auto split = static_cast<double>(forward_cycles(t));
    CHECK(split >= all_reduces + static_cast<double>(one) / t - 10);
    CHECK(split <= all_reduces + static_cast<double>(one));
  }
}
