// The GPU operator-level cost model: GEMM tiles and waves against closed forms, each layer's
// kernels against the layer's own FLOP counts, the host-bound regime, optimizer state and
// update traffic, and every GPU profile figure's source.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/embedded_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/gpu_kernels.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/validator.hpp"

using namespace pipetwin;

namespace {

HardwareProfile a100_fp16() { return make_hardware("a100", Params::parse({"precision=fp16"})); }

double gemm_flops(const std::vector<GpuKernel>& kernels) {
  double flops = 0;
  for (const auto& k : kernels) {
    if (k.is_gemm) flops += 2 * k.gemm.m * k.gemm.n * k.gemm.k * k.gemm.batch * k.causal;
  }
  return flops;
}

}  // namespace

TEST_CASE("a GEMM of exactly one wave of 256x128 tiles takes one tile's main loop, fill and store") {
  const HardwareProfile hw = a100_fp16();
  const ProcessorSpec& p = hw.processor;
  const GemmShape shape{256.0 * 12, 128.0 * 9, 4096, 1};  // 108 tiles on 108 SMs; 42 MB of operands: tensor-bound
  const GemmTiming t = gemm_timing(p.gpu, p, shape, 2);
  CHECK(t.waves == 1);
  CHECK(t.split_k == 1);
  // One block per SM at the SM's share of 312 TFLOP/s x 0.859 (tensor-bound: 256x128 fp16 tiles
  // need 2.9 TB/s of L2 of the 7.2 available), over K plus 2 steps of 32 of pipeline fill; then its
  // 256 x 128 x 2 bytes stored at a 108th of 0.9 x 2.039 TB/s.
  const double main_loop = 2.0 * 256 * 128 * (4096 + 64) / (312e12 * 0.859 / 108);
  const double store = 256.0 * 128 * 2 / (2.039e12 * 0.9 / 108);
  CHECK(t.seconds == doctest::Approx(main_loop + store).epsilon(1e-9));
}

TEST_CASE("wave quantisation: one tile more than the SMs hold costs a second wave") {
  const HardwareProfile hw = a100_fp16();
  const ProcessorSpec& p = hw.processor;
  const double full = gemm_timing(p.gpu, p, {256.0 * 108, 256, 8192, 1}, 2).seconds;  // 216 tiles of 256x128
  const double over = gemm_timing(p.gpu, p, {256.0 * 108 + 1, 256, 8192, 1}, 2).seconds;
  CHECK(over > 1.3 * full);  // a third wave of whatever tile is best, or smaller tiles at a lower rate
  CHECK(over < 2.05 * full);
}

TEST_CASE("split-K: a small output with a long K is split over the SMs") {
  const HardwareProfile hw = a100_fp16();
  const ProcessorSpec& p = hw.processor;
  const GemmShape shape{256, 256, 1 << 20, 1};  // 2 tiles of 256x128: 106 SMs would idle
  const GemmTiming t = gemm_timing(p.gpu, p, shape, 2);
  CHECK(t.split_k > 1);
  // Unsplit it would take a 256x128 block the whole K: 2 x 256 x 128 x K at one SM's rate.
  const double unsplit = 2.0 * 256 * 128 * (1 << 20) / (312e12 * 0.859 / 108);
  CHECK(t.seconds < unsplit / 10);
  // Never faster than the whole GEMM at the whole GPU's rate.
  CHECK(t.seconds > 2.0 * 256 * 256 * (1 << 20) / (312e12 * 0.859));
}

TEST_CASE("a memory-bound kernel takes its bytes over the achievable bandwidth, at least the least kernel time") {
  const HardwareProfile hw = a100_fp16();
  const ProcessorSpec& p = hw.processor;
  GpuKernel k;
  k.bytes = 1e9;
  CHECK(gpu_kernel_seconds(p.gpu, p, k, 2) == doctest::Approx(1e9 / (2.039e12 * 0.9)));
  k.bytes = 16;
  CHECK(gpu_kernel_seconds(p.gpu, p, k, 2) == doctest::Approx(p.gpu.kernel_s));
  // A GEMM with K = 1 is its operands' and result's traffic.
  const GemmTiming thin = gemm_timing(p.gpu, p, {16384, 16384, 1, 1}, 2);
  CHECK(thin.seconds >= (16384.0 * 16384 + 2 * 16384) * 2 / (2.039e12 * 0.9));
}

TEST_CASE("each layer's GEMM kernels do the layer's own multiply-accumulates") {
  const Network gpt = make_network("gpt", Params::parse({"layers=2", "hidden=512", "heads=8", "seq=256",
                                                        "vocab=1000", "batch=4", "dtype_bytes=2"}));
  const Network resnet = make_network("resnet20", Params());
  const Network mlp = make_network("mlp", Params());
  for (const Network* net : {&gpt, &resnet, &mlp}) {
    for (const Layer& layer : net->layers) {
      if (layer.forward_macs == 0) continue;
      CAPTURE(layer.name);
      const double b = 3;
      CHECK(gemm_flops(layer_kernels(layer, TaskKind::F, 3, layer.element_bytes)) ==
            doctest::Approx(2 * layer.forward_macs * b));
      CHECK(gemm_flops(layer_kernels(layer, TaskKind::RC, 3, layer.element_bytes)) ==
            doctest::Approx(2 * layer.forward_macs * b));
      // The weight gradient repeats the forward's weight products; attention cores have none.
      const double attention_macs = layer.type == "transformer_block"
                                        ? 2.0 * static_cast<double>(layer.input_shape[0] * layer.input_shape[0] * layer.input_shape[1])
                                        : 0.0;
      const double weight_macs = layer.forward_macs - attention_macs;
      CHECK(gemm_flops(layer_kernels(layer, TaskKind::BW, 3, layer.element_bytes)) ==
            doctest::Approx(2 * weight_macs * b));
      if (layer.activation_grad_flops > 0) {
        CHECK(gemm_flops(layer_kernels(layer, TaskKind::BA, 3, layer.element_bytes)) ==
              doctest::Approx((2 * weight_macs + 4 * attention_macs) * b));
      } else {
        CHECK(layer_kernels(layer, TaskKind::BA, 3, layer.element_bytes).empty());
      }
    }
  }
}

TEST_CASE("flash attention: one causal kernel, half the attention products, no s x s stash") {
  const Params common = Params::parse({"layers=1", "hidden=1024", "heads=16", "seq=2048", "batch=1", "dtype_bytes=2"});
  Params flash_params = common;
  flash_params.set("attention", "flash");
  const Layer standard = make_network("gpt", common).layers[1];
  const Layer flash = make_network("gpt", flash_params).layers[1];
  const double s = 2048, h = 1024;
  const double attention_flops = 2 * 2 * s * s * h;  // Q K^T and A V
  CHECK(gemm_flops(layer_kernels(standard, TaskKind::F, 1, 2)) -
            gemm_flops(layer_kernels(flash, TaskKind::F, 1, 2)) ==
        doctest::Approx(attention_flops / 2));
  CHECK(flash.stash_bytes == static_cast<std::int64_t>(34 * s * h + 4 * 16 * s));
  CHECK(flash.selective_stash_bytes == 0);
  CHECK_THROWS_WITH_AS(make_network("gpt", Params::parse({"attention=sparse"})),
                       "gpt: attention must be standard or flash, got 'sparse'", Error);
}

TEST_CASE("a small layer is host-bound: its framework operators and launches, not its kernels") {
  const HardwareProfile hw = a100_fp16();
  const Network net = make_network("gpt", Params::parse({"layers=1", "hidden=64", "heads=2", "seq=16",
                                                        "vocab=100", "batch=1", "dtype_bytes=2"}));
  const Layer& block = net.layers[1];
  // Megatron-DeepSpeed's block in plain operators' worth of host time (host_overhead.py): 77 for
  // the checkpointed forward, 67 for the recompute, 138 for the backward (BA and BW together), at
  // 10 us each, and a 5 us launch per kernel.
  const auto host_s = [&](TaskKind kind, double operators) {
    return operators * 10e-6 + static_cast<double>(layer_kernels(block, kind, 1, 2).size()) * 5e-6;
  };
  CHECK(hw.seconds(layer_work_cycles(hw, block, TaskKind::F, 1)) == doctest::Approx(host_s(TaskKind::F, 77)).epsilon(1e-6));
  CHECK(hw.seconds(layer_work_cycles(hw, block, TaskKind::RC, 1)) ==
        doctest::Approx(host_s(TaskKind::RC, 67)).epsilon(1e-6));
  const double backward_s = hw.seconds(layer_work_cycles(hw, block, TaskKind::BA, 1)) +
                            hw.seconds(layer_work_cycles(hw, block, TaskKind::BW, 1));
  const double launches_s = static_cast<double>(layer_kernels(block, TaskKind::BA, 1, 2).size() +
                                                layer_kernels(block, TaskKind::BW, 1, 2).size()) * 5e-6;
  CHECK(backward_s == doctest::Approx(138 * 10e-6 + launches_s).epsilon(1e-5));
}

TEST_CASE("optimizer state is each processor's static memory, Adam with master weights keeps 16 bytes a parameter") {
  GraphConfig config = graph_config("gpt", "1f1b", "a100", 2, 2, 1);
  config.params = {"layers=4", "hidden=256", "heads=4", "seq=128", "vocab=1000", "batch=4", "dtype_bytes=2",
                   "precision=fp16", "optimizer=adam", "master_weights=true", "cuts=2"};
  const TaskGraph g = make_graph(config);
  const Network net = make_request(config).network;
  std::int64_t first = net.layer_sum(0, 2, &Layer::parameters), second = net.layer_sum(3, 5, &Layer::parameters);
  CHECK(g.processors[0].static_bytes == first * (4 + 4 + 4 + 4));  // m, v, master weights, fp32 gradients
  CHECK(g.processors[1].static_bytes == second * 16);
  config.params = {"layers=4", "hidden=256", "heads=4", "seq=128", "vocab=1000", "batch=4"};
  CHECK(make_graph(config).processors[0].static_bytes == 0);  // SGD keeps nothing
  config.params.push_back("optimizer=momentum");
  CHECK(make_graph(config).processors[0].static_bytes == first * 4);
  config.params.back() = "optimizer=lion";
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("unknown optimizer 'lion'"), Error);
}

TEST_CASE("an update's traffic per parameter: the arrays it reads and writes") {
  OptimizerSpec spec;
  CHECK(spec.update_bytes_per_parameter(4) == 12);  // SGD: w, g read; w written
  spec.kind = OptimizerKind::momentum;
  CHECK(spec.update_bytes_per_parameter(4) == 20);  // and the momentum read and written
  spec.kind = OptimizerKind::adam;
  CHECK(spec.update_bytes_per_parameter(4) == 28);  // and both moments
  spec.master_weights = true;
  // fp16 gradients to fp32 (2 + 4), overflow check (4), norm (4), Adam on fp32 (28), fp32 weights
  // to fp16 (4 + 2), fp16 gradients zeroed (2).
  CHECK(spec.update_bytes_per_parameter(2) == 6 + 4 + 4 + 28 + 6 + 2);
}

TEST_CASE("every figure of every operator-model profile names its source") {
  int profiles = 0;
  for (const auto& file : embedded_hardware_files()) {
    const auto json = nlohmann::json::parse(file.text);
    if (json.value("cost_model", "") != "operator") continue;
    ++profiles;
    CAPTURE(file.name);
    const auto& gpu = json.at("processor").at("gpu");
    for (const char* key : {"gemm_efficiency", "l2_bytes_per_s", "memory_efficiency", "fp32_flops_per_s", "kernel_s",
                            "dispatch_s", "launch_s"}) {
      CAPTURE(key);
      REQUIRE(gpu.contains(key));
      REQUIRE(gpu.at("sources").contains(key));
      CHECK(gpu.at("sources").at(key).get<std::string>().size() > 20);
    }
  }
  CHECK(profiles == 6);  // v100, a100, a100-40gb, h100, h100-pcie, h200
}

TEST_CASE("every built-in link names its source, InfiniBand HDR and NDR at 25 and 50 GB/s a direction") {
  for (const auto& file : embedded_link_files()) {
    CAPTURE(file.name);
    const auto json = nlohmann::json::parse(file.text);
    REQUIRE(json.contains("source"));
    CHECK(json.at("source").get<std::string>().size() > 20);
  }
  CHECK(make_link("ib-hdr").bytes_per_s == doctest::Approx(200e9 / 8));
  CHECK(make_link("ib-ndr").bytes_per_s == doctest::Approx(400e9 / 8));
  CHECK(make_hardware("h100", Params::parse({"link=ib-ndr"})).link.name == "ib-ndr");
}

TEST_CASE("GPU profiles carry the datasheets' peaks, bandwidths and capacities") {
  CHECK(make_hardware("h100", Params::parse({"precision=fp16"})).processor.peak_flops_per_s == doctest::Approx(989.4e12));
  CHECK(make_hardware("h100-pcie", Params::parse({"precision=bf16"})).processor.peak_flops_per_s == doctest::Approx(756e12));
  CHECK(make_hardware("a100-40gb", Params()).processor.memory_bytes_per_s == doctest::Approx(1.555e12));
  const HardwareProfile h200 = make_hardware("h200", Params());
  CHECK(h200.processor.memory_bytes_per_s == doctest::Approx(4.8e12));
  CHECK(h200.processor.memory_bytes == 141000000000);
  CHECK(make_hardware("v100", Params::parse({"precision=fp16"})).processor.peak_flops_per_s == doctest::Approx(125e12));
  CHECK(to_string(make_hardware("a100", Params::parse({"cost_model=roofline"})).cost_model) == "roofline");
  CHECK_THROWS_WITH_AS(make_hardware("a100", Params::parse({"cost_model=exact"})),
                       "hardware parameter cost_model: unit, roofline, operator or systolic expected, got 'exact'", Error);
  CHECK_THROWS_WITH_AS(make_hardware("unit", Params::parse({"cost_model=operator"})),
                       doctest::Contains("the operator cost model needs the GPU's figures"), Error);
  CHECK_THROWS_WITH_AS(make_hardware("cpu-core", Params::parse({"dispatch_s=1e-6"})),
                       "hardware cpu-core: dispatch_s is a figure of the operator model, which this profile has no GPU "
                       "figures for",
                       Error);
  CHECK_THROWS_WITH_AS(make_hardware("a100", Params::parse({"gemm_efficiency=1.5"})),
                       doctest::Contains("gemm_efficiency: a number in (0, 1] expected, got 1.5"), Error);
}

TEST_CASE("activation_memory=pytorch: what PyTorch's autograd saves per layer of lenet5") {
  const Network net = make_network("lenet5", Params::parse({"activation_memory=pytorch"}));
  // c1: the input image (784 floats), the ReLU's output (6x28x28), max pooling's int64 indices (6x14x14).
  CHECK(net.layers[0].stash_bytes == 784 * 4 + 4704 * 4 + 1176 * 8);
  // c3: its input (a pooling's output: nobody saved it), ReLU (16x10x10), indices (16x5x5).
  CHECK(net.layers[1].stash_bytes == 1176 * 4 + 1600 * 4 + 400 * 8);
  // c5: its input (pooled, unsaved) and its ReLU; f6: only its ReLU (c5's ReLU saved its input).
  CHECK(net.layers[2].stash_bytes == 400 * 4 + 120 * 4);
  CHECK(net.layers[3].stash_bytes == 84 * 4);
  // output: the log-softmax (10 floats) and the int64 target; the total weight per microbatch.
  CHECK(net.layers[4].stash_bytes == 10 * 4 + 8);
  CHECK(net.layers[4].stash_fixed_bytes == 4);
  // 48,128 bytes a sample: what experiments/saved_tensors_vs_pytorch.py measured (docs/cost-model.md).
  CHECK(net.layer_sum(0, 4, &Layer::stash_bytes) == 48128);
  CHECK(make_network("lenet5", Params()).activation_memory == "executor");
  CHECK_THROWS_WITH_AS(make_network("lenet5", Params::parse({"activation_memory=jax"})),
                       doctest::Contains("unknown activation_memory convention 'jax'"), Error);
}

TEST_CASE("activation_memory=pytorch: batch norm's statistics per microbatch, a residual block's ReLU saved once") {
  const Network net = make_network("resnet20", Params::parse({"activation_memory=pytorch"}));
  const Layer& first = net.layers[0];  // conv 3->16 at 32x32, batch norm, ReLU
  CHECK(first.stash_bytes == (3 * 32 * 32 + 2 * 16 * 32 * 32) * 4);
  CHECK(first.stash_fixed_bytes == 4 * 16 * 4);  // saved mean, inverse deviation, running mean and variance
  // Every later conv's input is the previous ReLU's output, already saved: batch norm's input and
  // the ReLU's output only.
  const Layer& second = net.layers[1];
  CHECK(second.stash_bytes == 2 * 16 * 32 * 32 * 4);
}

TEST_CASE("recompute=blocks (Megatron-LM's): only transformer blocks run again, from their kept inputs") {
  GraphConfig config = graph_config("gpt", "1f1b", "a100", 2, 2, 1);
  config.params = {"layers=4", "hidden=256", "heads=4", "seq=128", "vocab=1000", "batch=4", "dtype_bytes=2",
                   "precision=fp16", "cuts=2", "recompute=blocks"};
  const TaskGraph g = make_graph(config);
  REQUIRE(validate(g).empty());
  const ScheduleRequest request = make_request(config);
  const Network& net = request.network;
  const HardwareProfile& hw = request.hardware;
  // Stage 0 is the embedding and blocks 1-2: its RC is the two blocks' forwards and one task's overhead.
  const std::int64_t expected = layer_work_cycles(hw, net.layers[1], TaskKind::RC, 2) +
                                layer_work_cycles(hw, net.layers[2], TaskKind::RC, 2) +
                                static_cast<std::int64_t>(std::ceil(hw.processor.task_overhead_s * hw.clock_hz() - 1e-9));
  int recomputations = 0;
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::RC) continue;
    ++recomputations;
    if (t.stage == 0) CHECK(t.cost_cycles == expected);
  }
  CHECK(recomputations == 4);  // 2 stages x 2 microbatches
  // What a stage's forward keeps: the whole stash less each block's stash but its input.
  const std::int64_t dropped = (net.layers[1].stash_bytes - net.layers[1].input_bytes) +
                               (net.layers[2].stash_bytes - net.layers[2].input_bytes);
  bool found = false;
  for (const auto& b : g.buffers) {
    if (b.name.kind != BufferKind::stash || b.name.owner != b.allocated_by) continue;
    const Task& owner = g.tasks[static_cast<std::size_t>(b.name.owner)];
    if (owner.kind != TaskKind::F || owner.stage != 0) continue;
    CHECK(b.bytes == (net.stash_bytes(0, 2, 2) - dropped * 2));
    found = true;
  }
  CHECK(found);
  // A network without transformer blocks recomputes nothing.
  GraphConfig cnn = graph_config("resnet20", "1f1b", "a100", 2, 2, 1);
  cnn.params = {"recompute=blocks"};
  for (const auto& t : make_graph(cnn).tasks) CHECK(t.kind != TaskKind::RC);
}

TEST_CASE("p2p=rendezvous: a transfer waits for its receiver's preceding task, the sender's next task for it") {
  GraphConfig config = graph_config("resnet20", "1f1b", "a100", 3, 8, 1);
  config.params = {"p2p=rendezvous"};
  const TaskGraph g = make_graph(config);
  REQUIRE(validate(g).empty());
  const auto by_processor = tasks_by_processor(g);
  std::vector<int> position(g.tasks.size(), -1);
  for (const auto& list : by_processor) {
    for (std::size_t i = 0; i < list.size(); ++i) position[static_cast<std::size_t>(list[i])] = static_cast<int>(i);
  }
  int checked = 0;
  for (const auto& x : g.tasks) {
    if (x.kind != TaskKind::X) continue;
    std::int32_t producer = -1;
    for (const auto& d : x.deps) {
      if (d.carries == Carries::activation || d.carries == Carries::activation_gradient) producer = d.task;
    }
    REQUIRE(producer >= 0);
    const Task& p = g.tasks[static_cast<std::size_t>(producer)];
    const auto& mine = by_processor[static_cast<std::size_t>(p.resource)];
    const std::size_t next = static_cast<std::size_t>(position[static_cast<std::size_t>(producer)]) + 1;
    if (next < mine.size()) {
      const auto& deps = g.tasks[static_cast<std::size_t>(mine[next])].deps;
      CHECK(std::any_of(deps.begin(), deps.end(), [&](const Dep& d) { return d.task == x.id; }));
    }
    for (const auto& c : g.tasks) {
      const bool consumes = std::any_of(c.deps.begin(), c.deps.end(), [&](const Dep& d) { return d.task == x.id; });
      if (!consumes || c.kind == TaskKind::X || position[static_cast<std::size_t>(c.id)] <= 0) continue;
      const std::int32_t before = by_processor[static_cast<std::size_t>(c.resource)]
                                              [static_cast<std::size_t>(position[static_cast<std::size_t>(c.id)] - 1)];
      CHECK(std::any_of(x.deps.begin(), x.deps.end(), [&](const Dep& d) { return d.task == before; }));
      ++checked;
    }
  }
  CHECK(checked > 0);
  // Coupling the stages never makes a step faster; on one processor there is nothing to couple.
  for (const int P : {1, 2, 3, 4}) {
    GraphConfig async = graph_config("resnet20", "1f1b", "a100", P, 8, 2);
    GraphConfig blocking = async;
    blocking.params = {"p2p=rendezvous"};
    const double a = evaluate(make_graph(async)).iteration_cycles;
    const double b = evaluate(make_graph(blocking)).iteration_cycles;
    CAPTURE(P);
    if (P == 1) CHECK(b == a);
    CHECK(b >= a);
  }
  config.params = {"p2p=eager"};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("unknown p2p mode 'eager'"), Error);
}
