// Hardware profiles, links and the cost model.
#include <doctest/doctest.h>

#include <memory>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network_registry.hpp"

using namespace pipetwin;

TEST_CASE("every embedded profile and link loads") {
  for (const auto& entry : hardware_entries()) {
    CAPTURE(entry.name);
    const HardwareProfile hw = make_hardware(entry.name, Params());
    CHECK(hw.clock_hz() > 0);
    CHECK(hw.processor.memory_bytes > 0);
  }
  for (const auto& name : link_names()) CHECK(make_link(name).bytes_per_s > 0);
  CHECK(hardware_entries().size() >= 6);
}

TEST_CASE("the unit model: F, BA, BW one cycle per layer, B two, U and transfers zero") {
  const HardwareProfile hw = make_hardware("unit", Params());
  const Network net = make_network("resnet20", Params());
  CHECK(compute_task_cycles(hw, net, TaskKind::F, 0, 9, 32) == 10);
  CHECK(compute_task_cycles(hw, net, TaskKind::BA, 3, 3, 32) == 1);
  CHECK(compute_task_cycles(hw, net, TaskKind::BW, 3, 4, 1) == 2);
  CHECK(compute_task_cycles(hw, net, TaskKind::B, 0, 19, 32) == 40);
  CHECK(compute_task_cycles(hw, net, TaskKind::U, 0, 19, 32) == 0);
  CHECK(transfer_cycles(hw, hw.link, 1 << 20) == 0);
}

TEST_CASE("the roofline model: compute-bound layer cycles from peak and efficiency") {
  const HardwareProfile hw = make_hardware("h100", Params::parse({"cost_model=roofline", "layer_overhead_s=0",
                                                                  "task_overhead_s=0"}));
  const Network net = make_network("mlp", Params::parse({"widths=8192,8192,10", "batch=1024"}));
  const Layer& big = net.layers[0];
  const double flops = big.forward_flops * 1024;
  const double flops_per_cycle = 66.9e12 * 0.6 / 1.98e9;
  CHECK(static_cast<double>(layer_work_cycles(hw, big, TaskKind::F, 1024)) ==
        doctest::Approx(flops / flops_per_cycle).epsilon(1e-6));
  // B = BA + BW.
  CHECK(layer_work_cycles(hw, big, TaskKind::B, 1024) ==
        layer_work_cycles(hw, big, TaskKind::BA, 1024) + layer_work_cycles(hw, big, TaskKind::BW, 1024));
  // A transfer: latency plus bytes over bandwidth, in cycles of the profile's clock.
  const double expected = 1.5e-6 * 1.98e9 + 1e9 / (450e9 / 1.98e9);
  CHECK(static_cast<double>(transfer_cycles(hw, hw.link, 1000000000)) == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("precision and SM partitions change peak FLOP/s") {
  CHECK(make_hardware("h100", Params::parse({"precision=bf16"})).processor.peak_flops_per_s ==
        doctest::Approx(989.4e12));
  const HardwareProfile part = make_hardware("h100-sm", Params::parse({"sms=33"}));
  CHECK(part.processor.peak_flops_per_s == doctest::Approx(66.9e12 * 33 / 132));
  CHECK(part.processor.shared_memory_system);
  CHECK(part.name == "h100-sm:sms=33");
  CHECK_THROWS_WITH_AS(make_hardware("h100-sm", Params::parse({"sms=200"})),
                       "hardware h100-sm: sms must be in 1..132, got 200", Error);
  CHECK_THROWS_AS(make_hardware("h100", Params::parse({"sms=8"})), Error);  // whole GPU only
  CHECK_THROWS_AS(make_hardware("h100", Params::parse({"precision=fp8"})), Error);
}

TEST_CASE("hardware errors: unknown names suggest, bad files name the path") {
  CHECK_THROWS_WITH_AS(make_hardware("h10", Params()),
                       doctest::Contains("unknown hardware 'h10'; did you mean 'h100'?"), Error);
  CHECK_THROWS_WITH_AS(make_link("nvlnk"), doctest::Contains("did you mean 'nvlink'?"), Error);
  const std::string bad = R"({"name": "x", "processor": {"clock_hz": "fast"}, "link": "nvlink",
                              "host_link": "pcie5"})";
  CHECK_THROWS_WITH_AS(hardware_from_json_text(bad, "x.json", Params()),
                       "x.json: /processor/clock_hz: expected a number, got a string 'fast'", Error);
}

TEST_CASE("a calibrated B costs the table's fused backward, or BA + BW where it has none") {
  HardwareProfile hw = make_hardware("cpu-core", Params::parse({"task_overhead_s=0"}));
  const Network net = make_network("mlp", Params::parse({"widths=8,4,2", "batch=8"}));
  auto calibration = std::make_shared<Calibration>();
  calibration->samples = 8;
  for (const auto& layer : net.layers) calibration->layers[layer.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
  hw.calibration = calibration;
  const double cycles_per_ms = hw.clock_hz() * 1e-3;
  CHECK(static_cast<double>(layer_work_cycles(hw, net.layers[0], TaskKind::B, 8)) == doctest::Approx(4 * cycles_per_ms));
  CHECK(static_cast<double>(layer_work_cycles(hw, net.layers[0], TaskKind::B, 16)) == doctest::Approx(8 * cycles_per_ms));
  CHECK(static_cast<double>(layer_work_cycles(hw, net.layers[0], TaskKind::BA, 8)) == doctest::Approx(2 * cycles_per_ms));
  for (auto& [name, times] : calibration->layers) times.backward_s = -1;  // not measured
  CHECK(static_cast<double>(layer_work_cycles(hw, net.layers[0], TaskKind::B, 8)) == doctest::Approx(5 * cycles_per_ms));
}

TEST_CASE("a calibrated task costs its layers, its overhead, and the overhead per layer in it") {
  HardwareProfile hw = make_hardware("cpu-core", Params());
  const Network net = make_network("mlp", Params::parse({"widths=8,4,2", "batch=8"}));
  auto calibration = std::make_shared<Calibration>();
  calibration->samples = 8;
  calibration->task_overhead_s = 5e-6;
  calibration->layer_overhead_s = 2e-6;
  for (const auto& layer : net.layers) calibration->layers[layer.name] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
  hw.calibration = calibration;
  const double cycles_per_s = hw.clock_hz();
  const int L = static_cast<int>(net.size());
  REQUIRE(L >= 2);
  // F over every layer: L x (1 ms + 2 us) + 5 us; over one layer: 1 ms + 2 us + 5 us.
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 0, L - 1, 8)) ==
        doctest::Approx((L * (1e-3 + 2e-6) + 5e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8)) ==
        doctest::Approx((1e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  // An update is one step for all its layers: no cost per layer.
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::U, 0, L - 1, 8)) ==
        doctest::Approx((L * 1e-4 + 5e-6) * cycles_per_s).epsilon(1e-6));
  // A kind timed apart pays its own overhead per task; the others still the table's.
  calibration->kind_overhead_s[TaskKind::F] = 9e-6;
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8)) ==
        doctest::Approx((1e-3 + 2e-6 + 9e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 8)) ==
        doctest::Approx((3e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  // The input's load: on a forward from the network's first layer only, scaled with its samples.
  calibration->input_load_s = 7e-6;  // for 8 samples
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 0, 0, 8)) ==
        doctest::Approx((1e-3 + 2e-6 + 9e-6 + 7e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 0, 0, 4)) ==
        doctest::Approx((0.5e-3 + 2e-6 + 9e-6 + 3.5e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8)) ==
        doctest::Approx((1e-3 + 2e-6 + 9e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 0, 0, 8)) ==
        doctest::Approx((3e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  // A task whose layers cost nothing (a BA at the first layer, which has no gradient to make)
  // still runs on the executor, and pays its kind's overhead; without a calibration it is free.
  calibration->layer_overhead_s = 0;
  calibration->layers[net.layers[0].name].activation_grad_s = 0;
  calibration->kind_overhead_s[TaskKind::BA] = 11e-6;
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BA, 0, 0, 8)) ==
        doctest::Approx(11e-6 * cycles_per_s).epsilon(1e-6));
  // A split task over its stage (zero bubble's) pays the table's figure for those where it has
  // one; one layer of a stage of several (LayerPipe's) the kind's. Other kinds: the same either way.
  calibration->stage_kind_overhead_s[TaskKind::BA] = 4e-6;
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BA, 0, 0, 8)) ==
        doctest::Approx(4e-6 * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BA, 0, 0, 8, SplitTaskSpan::layer)) ==
        doctest::Approx(11e-6 * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 8)) ==
        doctest::Approx((3e-3 + 5e-6) * cycles_per_s).epsilon(1e-6));  // no BW figure for a stage: the table's
  CHECK(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8, SplitTaskSpan::layer) == compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8));
  // A forward alone in its task takes the table's one-layer figure where it has one (scaled with
  // its samples); a forward over several layers, and every other kind, the layer's own.
  calibration->layer_overhead_s = 2e-6;
  calibration->layers[net.layers[1].name].forward_one_layer_s = 0.8e-3;  // for 8 samples
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8)) ==
        doctest::Approx((0.8e-3 + 2e-6 + 9e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 4)) ==
        doctest::Approx((0.4e-3 + 2e-6 + 9e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 0, 1, 8)) ==
        doctest::Approx((2 * (1e-3 + 2e-6) + 9e-6 + 7e-6) * cycles_per_s).epsilon(1e-6));  // and the input's load
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 8)) ==
        doctest::Approx((3e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  calibration->layers[net.layers[1].name].forward_one_layer_s = -1;
  // A BW alone in its task: the table's way back to the linear output (BA + BW - B = 2 + 3 - 4 ms)
  // plus the one-layer dW, scaled with its samples; over several layers, and without a fused B to
  // tell the way back, the table's BW.
  calibration->layers[net.layers[1].name].weight_grad_dw_one_layer_s = 1.5e-3;  // for 8 samples
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 8)) ==
        doctest::Approx((1e-3 + 1.5e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 4)) ==
        doctest::Approx((0.5e-3 + 0.75e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 0, 1, 8)) ==
        doctest::Approx((2 * (3e-3 + 2e-6) + 5e-6) * cycles_per_s).epsilon(1e-6));
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::F, 1, 1, 8)) ==
        doctest::Approx((1e-3 + 2e-6 + 9e-6) * cycles_per_s).epsilon(1e-6));  // other kinds: their own
  calibration->layers[net.layers[1].name].backward_s = -1;
  CHECK(static_cast<double>(compute_task_cycles(hw, net, TaskKind::BW, 1, 1, 8)) ==
        doctest::Approx((3e-3 + 2e-6 + 5e-6) * cycles_per_s).epsilon(1e-6));
  calibration->layers[net.layers[1].name].backward_s = 4e-3;
  calibration->layers[net.layers[1].name].weight_grad_dw_one_layer_s = -1;
  hw.calibration.reset();
  hw.processor.task_overhead_s = 3e-6;
  CHECK(compute_task_cycles(hw, net, TaskKind::BA, 0, 0, 8) == 0);
}
