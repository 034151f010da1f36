// What a layer's forward keeps for its backward under a framework's convention instead of the
// executors' (docs/cost-model.md, "Activation memory against PyTorch"): PyTorch keeps one buffer
// where a layer's output is the next layer's saved input, max pooling's int64 indices, and the
// loss's log-softmax and targets.
#pragma once
#include <string>

#include "pipetwin/models/network.hpp"

namespace pipetwin {

// Rewrites each conv2d and dense layer's stash_bytes and stash_fixed_bytes to what PyTorch's
// autograd saves for it (torch.autograd.graph.saved_tensors_hooks, each storage counted once, to
// the layer that saves it first, parameters left out). Transformer, embedding and LM-head layers
// keep theirs (Korthikanti et al.'s count is already the framework's).
void use_pytorch_saved_tensors(Network& network);

// From the model parameter activation_memory: "executor" (pipetwin's executors; the default) or
// "pytorch".
void apply_activation_memory(Network& network, const std::string& convention);

}  // namespace pipetwin
