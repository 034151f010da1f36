// Independent references for the CPU executor's numerics: plain sequential SGD with gradient
// accumulation over the same microbatches, and a replay of delayed SGD that reads, for every
// layer and microbatch, the weight version the schedule declares. Both run layer by layer in one
// thread, with no task graph machinery; they share only the layer kernels (checked separately by
// finite differences).
#pragma once
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::test {

struct SgdSettings {
  double learning_rate = 0.05;
  double momentum = 0.0;
};

// `groups` > 1: the microbatches' gradients summed in that many equal groups, then the groups'
// sums in order (the order data-parallel replicas sum them: their own, then each other's).
std::vector<cpu::Vector> sequential_sgd(const Network& network, const BatchSampler& data, int minibatches,
                                        int microbatches, const SgdSettings& sgd, std::vector<cpu::Vector> weights,
                                        int groups = 1);

std::vector<cpu::Vector> delayed_sgd_replay(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                                            const SgdSettings& sgd, std::vector<cpu::Vector> initial);

// max over layers of |a - b| / max(|b|, 1e-3), elementwise.
double max_relative_difference(const std::vector<cpu::Vector>& a, const std::vector<cpu::Vector>& b);

}  // namespace pipetwin::test
