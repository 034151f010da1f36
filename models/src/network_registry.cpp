// Networks by name: the built-ins with their parameters, and user JSON files (docs/formats.md).
#include "pipetwin/models/network_registry.hpp"

#include <functional>

#include "pipetwin/models/builtin_networks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/framework_memory.hpp"
#include "pipetwin/models/json_read.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {
namespace {

bool is_json_path(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

ParamSpec batch_param(const std::string& fallback) {
  return {"batch", fallback, "samples per minibatch"};
}
const ParamSpec kDtypeParam{"dtype_bytes", "4", "bytes per parameter and activation element"};
const ParamSpec kOptimizerParam{"optimizer", "sgd", "sgd, momentum or adam (update time and state memory)"};
const ParamSpec kMasterWeightsParam{"master_weights", "false",
                                    "mixed precision: fp32 master weights and gradients beside dtype_bytes ones"};
const ParamSpec kActivationMemoryParam{"activation_memory", "executor",
                                       "what a forward keeps: executor (pipetwin's executors) or pytorch (its saved tensors)"};

// Parameters every network takes after its own: the element size, the optimizer and the
// activation-memory convention.
std::vector<ParamSpec> with_common(std::vector<ParamSpec> params) {
  params.insert(params.end(), {kDtypeParam, kOptimizerParam, kMasterWeightsParam, kActivationMemoryParam});
  return params;
}

// The common parameters beyond the element size (which the layers are built with), applied to a
// built network.
Network with_training_params(Network network, const Params& params) {
  network.optimizer = optimizer_from_params(params);
  apply_activation_memory(network, params.get_string("activation_memory", "executor"));
  return network;
}

struct Builtin {
  NetworkEntry entry;
  std::function<Network(const Params&)> make;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> list = [] {
    std::vector<Builtin> items;
    items.push_back({{"mlp", "multilayer perceptron: dense layers with ReLU, softmax loss",
                      with_common({{"widths", "784,256,256,10", "layer widths, input first"}, batch_param("64")})},
                     mlp_network});
    items.push_back({{"lenet5", "LeNet-5 on 28x28x1 (MNIST / Fashion-MNIST), 5 layers",
                      with_common({{"c3", "full", "C3 connections: full, or lecun (the 1998 sparse table)"},
                                   batch_param("128")})},
                     lenet5_network});
    items.push_back({{"alexnet", "AlexNet, 8 layers; CIFAR-10 variant or the ImageNet original",
                      with_common({{"input", "cifar10", "cifar10 (32x32) or imagenet (227x227)"}, batch_param("128")})},
                     alexnet_network});
    items.push_back({{"vgg16", "VGG-16 (configuration D), 16 layers",
                      with_common({{"input", "cifar10", "cifar10 (32x32, batch norm) or imagenet (224x224)"},
                                   batch_param("128 (cifar10) / 32 (imagenet)")})},
                     vgg16_network});
    for (const int depth : {8, 20, 56, 110, 224, 362}) {
      items.push_back({{"resnet" + std::to_string(depth),
                        "CIFAR ResNet-" + std::to_string(depth) + ": 3 stages of " +
                            std::to_string((depth - 2) / 6) + " basic blocks, " +
                            std::to_string(depth) + " layers",
                        with_common({batch_param("128")})},
                       [depth](const Params& params) { return cifar_resnet_network(depth, params); }});
    }
    items.push_back({{"gpt", "GPT decoder: embedding, transformer blocks, LM head (Megatron FLOPs)",
                      with_common({{"layers", "12", "transformer blocks"},
                       {"hidden", "768", "hidden size"},
                       {"heads", "12", "attention heads"},
                       {"seq", "1024", "sequence length"},
                       {"vocab", "50257", "vocabulary size"},
                       {"attention", "standard", "standard (scores, softmax, dropout kernels) or flash"},
                       batch_param("8")})},
                     gpt_network});
    return items;
  }();
  return list;
}

std::vector<std::string> builtin_names() {
  std::vector<std::string> names;
  for (const auto& item : builtins()) names.push_back(item.entry.name);
  return names;
}

Conv2dSpec read_conv2d(const JsonReader& layer) {
  layer.check_keys({"type", "name", "out_channels", "kernel", "stride", "padding", "groups",
                    "connections", "bias", "batch_norm", "relu", "residual_add", "pool",
                    "cut_after"});
  Conv2dSpec spec;
  spec.out_channels = layer.get_int("out_channels");
  spec.kernel = layer.get_int("kernel", 3);
  spec.stride = layer.get_int("stride", 1);
  spec.padding = layer.get_int("padding", 0);
  spec.groups = layer.get_int("groups", 1);
  spec.connections = layer.get_int("connections", 0);
  spec.bias = layer.get_bool("bias", true);
  spec.batch_norm = layer.get_bool("batch_norm", false);
  spec.relu = layer.get_bool("relu", true);
  spec.residual_add = layer.get_bool("residual_add", false);
  if (layer.has("pool")) {
    const JsonReader pool = layer.at("pool");
    pool.check_keys({"kind", "kernel", "stride"});
    spec.pool.kind = pool.get_string("kind");
    spec.pool.kernel = pool.get_int("kernel", 2);
    spec.pool.stride = pool.get_int("stride", spec.pool.kernel);
  }
  return spec;
}

}  // namespace

const std::vector<NetworkEntry>& network_entries() {
  static const std::vector<NetworkEntry> entries = [] {
    std::vector<NetworkEntry> list;
    for (const auto& item : builtins()) list.push_back(item.entry);
    return list;
  }();
  return entries;
}

std::vector<ParamSpec> network_params(const std::string& name) {
  if (is_json_path(name)) return with_common({batch_param("from the file")});
  for (const auto& item : builtins()) {
    if (item.entry.name == name) return item.entry.params;
  }
  throw Error(unknown_name_message("model", name, builtin_names()) +
              "; or give a network file ending in .json");
}

Network make_network(const std::string& name, const Params& params) {
  if (is_json_path(name)) return load_network_json(name, params);
  for (const auto& item : builtins()) {
    if (item.entry.name == name) {
      params.check_known(item.entry.params, "model " + name);
      return with_training_params(item.make(params), params);
    }
  }
  throw Error(unknown_name_message("model", name, builtin_names()) +
              "; or give a network file ending in .json");
}

Network load_network_json(const std::string& file_path, const Params& params) {
  return network_from_json_text(JsonReader::read_text_file(file_path), file_path, params);
}

Network network_from_json_text(const std::string& text, const std::string& source,
                               const Params& params) {
  params.check_known(with_common({batch_param("")}), "a network file");
  const nlohmann::json document = JsonReader::parse(text, source);
  const JsonReader root(document, source);
  root.check_keys({"name", "batch", "dtype_bytes", "input", "layers", "description"});
  std::vector<std::int64_t> input;
  const JsonReader input_reader = root.at("input");
  for (std::size_t i = 0; i < input_reader.array_size(); ++i) {
    input.push_back(input_reader.at(i).as_int());
  }
  const std::int64_t batch = params.get_int("batch", root.get_int("batch", 32));
  NetworkBuilder net(root.get_string("name", source), input, batch,
                     params.get_int("dtype_bytes", root.get_int("dtype_bytes", 4)));
  const JsonReader layers = root.at("layers");
  if (layers.array_size() == 0) layers.fail("a non-empty array of layers");
  for (std::size_t i = 0; i < layers.array_size(); ++i) {
    const JsonReader layer = layers.at(i);
    const std::string type = layer.get_string("type");
    const std::string name = layer.get_string("name", type + std::to_string(i + 1));
    try {
      if (type == "conv2d") {
        net.conv2d(name, read_conv2d(layer));
      } else if (type == "dense") {
        layer.check_keys({"type", "name", "out_features", "bias", "relu", "loss", "cut_after"});
        DenseSpec spec;
        spec.out_features = layer.get_int("out_features");
        spec.bias = layer.get_bool("bias", true);
        spec.loss = layer.get_bool("loss", i + 1 == layers.array_size());
        spec.relu = layer.get_bool("relu", !spec.loss);
        net.dense(name, spec);
      } else if (type == "transformer_block") {
        layer.check_keys({"type", "name", "heads", "ffn_multiplier", "cut_after"});
        TransformerBlockSpec spec;
        spec.heads = layer.get_int("heads");
        spec.ffn_multiplier = layer.get_int("ffn_multiplier", 4);
        net.transformer_block(name, spec);
      } else if (type == "embedding") {
        layer.check_keys({"type", "name", "vocab", "hidden", "cut_after"});
        EmbeddingSpec spec;
        spec.vocab = layer.get_int("vocab");
        spec.hidden = layer.get_int("hidden");
        net.embedding(name, spec);
      } else if (type == "lm_head") {
        layer.check_keys({"type", "name", "vocab", "cut_after"});
        LmHeadSpec spec;
        spec.vocab = layer.get_int("vocab");
        net.lm_head(name, spec);
      } else {
        layer.at("type").fail("one of conv2d, dense, transformer_block, embedding, lm_head");
      }
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.rfind(source, 0) == 0) throw;  // already names the file and path
      throw Error(source + ": " + layer.path() + ": " + message);
    }
    if (!layer.get_bool("cut_after", true)) net.forbid_cut_after_last();
  }
  return with_training_params(net.build(), params);
}

}  // namespace pipetwin
