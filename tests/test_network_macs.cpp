// Forward multiply-accumulate counts of the built-in networks against published figures.
#include <doctest/doctest.h>

#include "pipetwin/models/network_registry.hpp"

using namespace pipetwin;

namespace {

double macs(const std::string& name, const std::vector<std::string>& params = {}) {
  return make_network(name, Params::parse(params)).forward_macs_per_sample();
}

}  // namespace

TEST_CASE("LeNet-5 with the 1998 C3 table matches LeCun et al.'s connection counts") {
  // LeCun, Bottou, Bengio, Haffner 1998, section II.B: C1 has 122,304 connections, C3 151,600,
  // C5 48,120, F6 10,164 (multiply-accumulates plus one bias addition per output).
  const Network net = make_network("lenet5", Params::parse({"c3=lecun"}));
  REQUIRE(net.size() == 5);
  auto connections = [&](int layer, double outputs) { return net.layers[layer].forward_macs + outputs; };
  CHECK(connections(0, 6 * 28 * 28) == doctest::Approx(122304).epsilon(0.03));
  CHECK(connections(1, 16 * 10 * 10) == doctest::Approx(151600).epsilon(0.03));
  CHECK(connections(2, 120) == doctest::Approx(48120).epsilon(0.03));
  CHECK(connections(3, 84) == doctest::Approx(10164).epsilon(0.03));
}

TEST_CASE("AlexNet (ImageNet) matches Sze et al. 2017: 724M MACs, 61M weights") {
  // Sze, Chen, Yang, Emer, "Efficient Processing of Deep Neural Networks", Proc. IEEE 2017, Table 3.
  CHECK(macs("alexnet", {"input=imagenet"}) == doctest::Approx(724e6).epsilon(0.03));
  CHECK(static_cast<double>(make_network("alexnet", Params::parse({"input=imagenet"})).parameters()) ==
        doctest::Approx(61e6).epsilon(0.03));
}

TEST_CASE("VGG-16 (ImageNet) matches Sze et al. 2017: 15.5G MACs, 138M weights") {
  CHECK(macs("vgg16", {"input=imagenet"}) == doctest::Approx(15.5e9).epsilon(0.03));
  CHECK(static_cast<double>(make_network("vgg16", Params::parse({"input=imagenet"})).parameters()) ==
        doctest::Approx(138e6).epsilon(0.03));
}

TEST_CASE("CIFAR ResNets match published FLOP (multiply-add) counts") {
  // Li, Kadav, Durdanovic, Samet, Graf, "Pruning Filters for Efficient ConvNets", ICLR 2017,
  // Table 1: ResNet-56 1.25E8, ResNet-110 2.53E8.
  CHECK(macs("resnet56") == doctest::Approx(1.25e8).epsilon(0.03));
  CHECK(macs("resnet110") == doctest::Approx(2.53e8).epsilon(0.03));
  // He, Kang, Dong, Fu, Yang, "Soft Filter Pruning", IJCAI 2018, Table 1: ResNet-20 4.1E7.
  CHECK(macs("resnet20") == doctest::Approx(4.1e7).epsilon(0.03));
}

TEST_CASE("CIFAR ResNets have 6n+2 layers, counted as the papers count them") {
  for (const int depth : {20, 56, 110, 224, 362}) {
    const Network net = make_network("resnet" + std::to_string(depth), Params());
    CHECK(net.size() == static_cast<std::size_t>(depth));
    // Cuts fall only between residual blocks: after conv1, after each block, none after the last.
    CHECK(net.allowed_cuts().size() == static_cast<std::size_t>(1 + 3 * (depth - 2) / 6));
  }
}

TEST_CASE("GPT-3 175B forward compute matches Kaplan et al. 2020") {
  // Kaplan et al., "Scaling Laws for Neural Language Models", Table 1: forward pass
  // C = 2N + 2 n_layer n_ctx d_attn FLOPs per token, N = 12 n_layer d_model^2 (no embeddings).
  const double layers = 96, hidden = 12288, seq = 2048;
  const Network net = make_network("gpt", Params::parse({"layers=96", "hidden=12288", "heads=96",
                                                         "seq=2048", "vocab=50257"}));
  const double kaplan_flops_per_token = 2 * (12 * layers * hidden * hidden) + 2 * layers * seq * hidden;
  const double our_macs_per_token = net.forward_macs_per_sample() / seq;
  CHECK(2 * our_macs_per_token == doctest::Approx(kaplan_flops_per_token).epsilon(0.03));
}

TEST_CASE("GPT forward FLOPs follow Megatron-LM's closed form exactly") {
  // Narayanan et al., SC'21, eq. (3): an iteration (forward + backward) costs
  // 72 B s l h^2 (1 + s/(6h) + V/(12 h l)); the forward is a third of it.
  const double B = 4, s = 512, l = 6, h = 1024, V = 32000;
  const Network net = make_network("gpt", Params::parse({"layers=6", "hidden=1024", "heads=16",
                                                         "seq=512", "vocab=32000", "batch=4"}));
  const double megatron_forward = 24 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
  CHECK(2 * net.forward_macs_per_sample() * B == doctest::Approx(megatron_forward).epsilon(1e-12));
  // Backward (activation + weight gradients) is at least twice the forward's GEMM work.
  double backward_flops = 0;
  for (const auto& layer : net.layers) {
    backward_flops += layer.activation_grad_flops + layer.weight_grad_flops;
  }
  CHECK(backward_flops >= 2 * megatron_forward / B * (1 - 1e-9));
}

TEST_CASE("every built-in network builds with sane per-layer costs") {
  for (const auto& entry : network_entries()) {
    const Network net = make_network(entry.name, Params());
    CAPTURE(entry.name);
    REQUIRE(net.size() > 0);
    for (std::size_t i = 0; i < net.size(); ++i) {
      const Layer& layer = net.layers[i];
      CAPTURE(layer.name);
      CHECK(layer.forward_flops >= 2 * layer.forward_macs);
      CHECK(layer.weight_grad_flops >= 0);
      CHECK(layer.output_bytes > 0);
      if (i > 0) CHECK(layer.input_bytes == net.layers[i - 1].output_bytes);
    }
    CHECK(net.layers.front().activation_grad_flops == 0);  // nothing needs the input's gradient
    CHECK(!net.layers.back().cut_allowed_after);
  }
}
