// Constructors of the built-in networks; use make_network() (network_registry.hpp) by name.
#pragma once
#include "pipetwin/models/network.hpp"
#include "pipetwin/models/params.hpp"

namespace pipetwin {

Network mlp_network(const Params& params);
Network lenet5_network(const Params& params);
Network alexnet_network(const Params& params);
Network vgg16_network(const Params& params);
Network cifar_resnet_network(int depth, const Params& params);  // depth = 6n + 2
Network gpt_network(const Params& params);

}  // namespace pipetwin
