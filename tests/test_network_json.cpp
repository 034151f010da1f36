// User-defined networks from JSON, and the errors bad files get.
#include <doctest/doctest.h>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network_registry.hpp"

using namespace pipetwin;

namespace {

std::string error_of(const std::string& text) {
  try {
    network_from_json_text(text, "net.json", Params());
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a JSON network equal to a built-in one has the same costs") {
  const std::string text = R"({
    "name": "my-mlp", "batch": 64, "input": [784],
    "layers": [
      {"type": "dense", "out_features": 256},
      {"type": "dense", "out_features": 256},
      {"type": "dense", "out_features": 10}
    ]})";
  const Network from_json = network_from_json_text(text, "net.json", Params());
  const Network builtin = make_network("mlp", Params());
  REQUIRE(from_json.size() == builtin.size());
  for (std::size_t i = 0; i < builtin.size(); ++i) {
    CHECK(from_json.layers[i].forward_flops == builtin.layers[i].forward_flops);
    CHECK(from_json.layers[i].activation_grad_flops == builtin.layers[i].activation_grad_flops);
    CHECK(from_json.layers[i].weight_grad_flops == builtin.layers[i].weight_grad_flops);
    CHECK(from_json.layers[i].param_bytes == builtin.layers[i].param_bytes);
    CHECK(from_json.layers[i].stash_bytes == builtin.layers[i].stash_bytes);
  }
  CHECK(network_from_json_text(text, "net.json", Params::parse({"batch=8"})).batch == 8);
}

TEST_CASE("conv layers in JSON: residual blocks forbid cuts") {
  const std::string text = R"({
    "name": "tiny-resnet", "input": [3, 8, 8],
    "layers": [
      {"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1, "batch_norm": true},
      {"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1, "cut_after": false},
      {"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1, "residual_add": true,
       "pool": {"kind": "global-avg"}},
      {"type": "dense", "out_features": 10}
    ]})";
  const Network net = network_from_json_text(text, "net.json", Params());
  CHECK(net.allowed_cuts() == std::vector<int>{0, 2});
  CHECK(net.layers[0].forward_macs == doctest::Approx(8 * 8 * 9 * 3 * 4));
  CHECK(net.layers[2].output_shape == std::vector<std::int64_t>{4, 1, 1});
}

TEST_CASE("network file errors name the file, the JSON path and what was expected") {
  CHECK(error_of("{\"input\": [4], \"layers\": [") .find("net.json:1:") == 0);
  CHECK(error_of(R"({"input": [4], "layers": [{"type": "dense", "out_features": "ten"}]})") ==
        "net.json: /layers/0/out_features: expected an integer, got a string 'ten'");
  CHECK(error_of(R"({"input": [4], "layers": [{"type": "densse", "out_features": 3}]})") ==
        "net.json: /layers/0/type: expected one of conv2d, dense, transformer_block, embedding, "
        "lm_head, got a string 'densse'");
  CHECK(error_of(R"({"input": [4], "layers": [{"type": "dense", "out_feature": 3}]})")
            .find("net.json: /layers/0/out_feature: unknown key 'out_feature'; did you mean "
                  "'out_features'?") == 0);
  CHECK(error_of(R"({"layers": []})") == "net.json: /: missing required key 'input'");
  // A name with an escape sequence or a newline would act on the terminal it is printed to.
  // (The JSON escapes in the text, \u001b and \n, are the escape character and a newline once parsed.)
  CHECK(error_of(R"({"input": [4], "layers": [{"type": "dense", "out_features": 3, "name": "fc\u001b[2J"}]})")
            .find("net.json: /layers/0/name: expected a string without control characters") == 0);
  CHECK(error_of(R"({"name": "two\nlines", "input": [4], "layers": [{"type": "dense", "out_features": 3}]})")
            .find("net.json: /name: expected a string without control characters") == 0);
  CHECK(error_of(R"({"input": [1, 4, 4], "layers": [{"type": "conv2d", "out_channels": 2, "kernel": 7}]})")
            .find("net.json: /layers/0: layer 'conv2d1': kernel larger than the padded input") == 0);
}

TEST_CASE("activation memory per sample is what the executors keep: x-hat, argmax, the residual shortcut") {
  // Worked by hand from the layer shapes (fp32): a conv stashes its input and its output after
  // the ReLU; with batch norm also x-hat (another output) and 1 / std per channel per microbatch;
  // with max pooling a 32-bit argmax per pooled element.
  const Network lenet = make_network("lenet5", Params::parse({}));
  const Layer& c1 = lenet.layers[0];  // 1x28x28 -> conv 6x28x28 (padding 2) -> max pool 6x14x14
  CHECK(c1.stash_bytes == (1 * 28 * 28 + 6 * 28 * 28) * 4 + 6 * 14 * 14 * 4);
  CHECK(c1.stash_fixed_bytes == 0);
  const Network resnet = make_network("resnet20", Params::parse({}));
  const Layer& conv = resnet.layers[0];  // 3x32x32 -> 16x32x32, batch norm, ReLU
  CHECK(conv.stash_bytes == (3 * 32 * 32 + 2 * 16 * 32 * 32) * 4);
  CHECK(conv.stash_fixed_bytes == 16 * 4);
  // The first block's first conv sends its input (the block input) beside its output to the
  // second conv, which adds it; the gradient comes back as large.
  CHECK(resnet.layers[1].shortcut_bytes == 16 * 32 * 32 * 4);
  CHECK(resnet.activation_bytes_after(1) == 2 * 16 * 32 * 32 * 4);
  CHECK(resnet.layers[2].shortcut_bytes == 0);
  CHECK(resnet.activation_bytes_after(2) == 16 * 32 * 32 * 4);
  // The loss layer holds no gradient at its output (its stash has d loss / d logits).
  CHECK(resnet.output_gradient_bytes(static_cast<int>(resnet.size()) - 1) == 0);
}
