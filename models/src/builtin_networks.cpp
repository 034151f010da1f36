// The built-in networks, with layers counted as the papers count them (ResNet-56 has 56).
#include "pipetwin/models/builtin_networks.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

Conv2dSpec conv(std::int64_t out, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  Conv2dSpec spec;
  spec.out_channels = out;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.padding = padding;
  return spec;
}

Conv2dSpec with_pool(Conv2dSpec spec, const std::string& kind, std::int64_t kernel,
                     std::int64_t stride) {
  spec.pool.kind = kind;
  spec.pool.kernel = kernel;
  spec.pool.stride = stride;
  return spec;
}

DenseSpec fc(std::int64_t out, bool last) {
  DenseSpec spec;
  spec.out_features = out;
  spec.relu = !last;
  spec.loss = last;
  return spec;
}

std::int64_t dtype_bytes(const Params& params) { return params.get_int("dtype_bytes", 4); }

}  // namespace

Network mlp_network(const Params& params) {
  const auto widths = params.get_int_list("widths", {784, 256, 256, 10});
  if (widths.size() < 2) throw Error("mlp: widths needs at least two sizes (input and output)");
  for (const auto width : widths) {
    if (width < 1) throw Error("mlp: every width must be positive");
  }
  NetworkBuilder net("mlp", {widths[0]}, params.get_int("batch", 64), dtype_bytes(params));
  for (std::size_t i = 1; i < widths.size(); ++i) {
    net.dense("fc" + std::to_string(i), fc(widths[i], i + 1 == widths.size()));
  }
  return net.build();
}

Network lenet5_network(const Params& params) {
  const std::string table = params.get_string("c3", "full");
  if (table != "full" && table != "lecun") {
    throw Error("lenet5: c3 must be 'full' or 'lecun', got '" + table + "'");
  }
  NetworkBuilder net("lenet5", {1, 28, 28}, params.get_int("batch", 128), dtype_bytes(params));
  // 28x28 padded by 2 gives the 32x32 geometry of LeCun et al. 1998.
  net.conv2d("c1", with_pool(conv(6, 5, 1, 2), "max", 2, 2));
  Conv2dSpec c3 = with_pool(conv(16, 5, 1, 0), "max", 2, 2);
  if (table == "lecun") c3.connections = 60;  // the 1998 paper's sparse S2-C3 table
  net.conv2d("c3", c3);
  net.dense("c5", fc(120, false));
  net.dense("f6", fc(84, false));
  net.dense("output", fc(10, true));
  return net.build();
}

Network alexnet_network(const Params& params) {
  const std::string input = params.get_string("input", "cifar10");
  const std::int64_t batch = params.get_int("batch", 128);
  if (input == "imagenet") {
    // Krizhevsky et al. 2012, with the two-GPU grouping of conv2, conv4 and conv5.
    NetworkBuilder net("alexnet", {3, 227, 227}, batch, dtype_bytes(params));
    net.conv2d("conv1", with_pool(conv(96, 11, 4, 0), "max", 3, 2));
    Conv2dSpec conv2 = with_pool(conv(256, 5, 1, 2), "max", 3, 2);
    conv2.groups = 2;
    net.conv2d("conv2", conv2);
    net.conv2d("conv3", conv(384, 3, 1, 1));
    Conv2dSpec conv4 = conv(384, 3, 1, 1);
    conv4.groups = 2;
    net.conv2d("conv4", conv4);
    Conv2dSpec conv5 = with_pool(conv(256, 3, 1, 1), "max", 3, 2);
    conv5.groups = 2;
    net.conv2d("conv5", conv5);
    net.dense("fc6", fc(4096, false));
    net.dense("fc7", fc(4096, false));
    net.dense("fc8", fc(1000, true));
    return net.build();
  }
  if (input != "cifar10") throw Error("alexnet: input must be cifar10 or imagenet, got '" + input + "'");
  // CIFAR-10 variant: AlexNet's five convs and three dense layers scaled to 32x32 inputs.
  NetworkBuilder net("alexnet", {3, 32, 32}, batch, dtype_bytes(params));
  net.conv2d("conv1", with_pool(conv(64, 5, 1, 2), "max", 3, 2));
  net.conv2d("conv2", with_pool(conv(192, 5, 1, 2), "max", 3, 2));
  net.conv2d("conv3", conv(384, 3, 1, 1));
  net.conv2d("conv4", conv(256, 3, 1, 1));
  net.conv2d("conv5", with_pool(conv(256, 3, 1, 1), "max", 3, 2));
  net.dense("fc6", fc(4096, false));
  net.dense("fc7", fc(4096, false));
  net.dense("fc8", fc(10, true));
  return net.build();
}

Network vgg16_network(const Params& params) {
  const std::string input = params.get_string("input", "cifar10");
  if (input != "cifar10" && input != "imagenet") {
    throw Error("vgg16: input must be cifar10 or imagenet, got '" + input + "'");
  }
  const bool imagenet = input == "imagenet";
  const std::int64_t side = imagenet ? 224 : 32;
  NetworkBuilder net("vgg16", {3, side, side}, params.get_int("batch", imagenet ? 32 : 128),
                     dtype_bytes(params));
  // Simonyan & Zisserman configuration D; the pooling after a group folds into its last conv.
  const std::vector<std::vector<std::int64_t>> groups = {
      {64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  int index = 1;
  for (const auto& group : groups) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      Conv2dSpec spec = conv(group[i], 3, 1, 1);
      spec.batch_norm = !imagenet;  // the CIFAR variant uses batch norm
      if (i + 1 == group.size()) spec = with_pool(spec, "max", 2, 2);
      net.conv2d("conv" + std::to_string(index++), spec);
    }
  }
  const std::int64_t hidden = imagenet ? 4096 : 512;
  net.dense("fc14", fc(hidden, false));
  net.dense("fc15", fc(hidden, false));
  net.dense("fc16", fc(imagenet ? 1000 : 10, true));
  return net.build();
}

Network cifar_resnet_network(int depth, const Params& params) {
  if (depth < 8 || (depth - 2) % 6 != 0) {
    throw Error("resnet: depth must be 6n+2 with n >= 1, got " + std::to_string(depth));
  }
  const int blocks = (depth - 2) / 6;
  NetworkBuilder net("resnet" + std::to_string(depth), {3, 32, 32}, params.get_int("batch", 128),
                     dtype_bytes(params));
  Conv2dSpec first = conv(16, 3, 1, 1);
  first.bias = false;
  first.batch_norm = true;
  net.conv2d("conv1", first);
  const std::int64_t widths[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    for (int block = 0; block < blocks; ++block) {
      const std::string prefix =
          "stage" + std::to_string(stage + 1) + ".block" + std::to_string(block + 1);
      // He et al. 2016, CIFAR: 3x3 basic blocks; option-A shortcuts (no parameters).
      Conv2dSpec a = conv(widths[stage], 3, (stage > 0 && block == 0) ? 2 : 1, 1);
      a.bias = false;
      a.batch_norm = true;
      net.conv2d(prefix + ".conv1", a);
      net.forbid_cut_after_last();  // a cut here would break the residual connection
      Conv2dSpec b = conv(widths[stage], 3, 1, 1);
      b.bias = false;
      b.batch_norm = true;
      b.residual_add = true;
      if (stage == 2 && block + 1 == blocks) b.pool.kind = "global-avg";
      net.conv2d(prefix + ".conv2", b);
    }
  }
  net.dense("fc", fc(10, true));
  return net.build();
}

Network gpt_network(const Params& params) {
  const std::int64_t layers = params.get_int("layers", 12);
  const std::int64_t hidden = params.get_int("hidden", 768);
  const std::int64_t heads = params.get_int("heads", 12);
  const std::int64_t seq = params.get_int("seq", 1024);
  const std::int64_t vocab = params.get_int("vocab", 50257);
  if (layers < 1 || hidden < 1 || heads < 1 || seq < 1 || vocab < 1) {
    throw Error("gpt: layers, hidden, heads, seq and vocab must be positive");
  }
  NetworkBuilder net("gpt", {seq}, params.get_int("batch", 8), dtype_bytes(params));
  EmbeddingSpec embedding;
  embedding.vocab = vocab;
  embedding.hidden = hidden;
  net.embedding("embed", embedding);
  TransformerBlockSpec block;
  block.heads = heads;
  const std::string attention = params.get_string("attention", "standard");
  if (attention != "standard" && attention != "flash") {
    throw Error("gpt: attention must be standard or flash, got '" + attention + "'");
  }
  block.flash_attention = attention == "flash";
  for (std::int64_t i = 1; i <= layers; ++i) net.transformer_block("block" + std::to_string(i), block);
  LmHeadSpec head;
  head.vocab = vocab;
  net.lm_head("head", head);
  return net.build();
}

}  // namespace pipetwin
