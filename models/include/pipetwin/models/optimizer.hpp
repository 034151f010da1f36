// The optimizer a training run updates its weights with, and mixed precision's master copy: what
// an update moves through memory per parameter and what it keeps beside the weights
// (docs/cost-model.md, "Optimizers and mixed precision").
#pragma once
#include <cstdint>
#include <string>

#include "pipetwin/models/params.hpp"

namespace pipetwin {

enum class OptimizerKind { sgd, momentum, adam };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::sgd;
  // Mixed precision: fp32 master weights and fp32 gradients beside the weights and gradients of
  // the network's element size (Micikevicius et al. 2018; Megatron-LM's fp16/bf16 optimizer).
  bool master_weights = false;

  // Bytes per parameter kept for the whole run beyond the weights and their gradient at the
  // network's element size: momentum 4, Adam 8 (two fp32 moments), master weights and gradients 8.
  std::int64_t state_bytes_per_parameter() const;
  // Bytes per parameter one update reads and writes, weights and gradients of `element_bytes`.
  double update_bytes_per_parameter(std::int64_t element_bytes) const;
  // Kernels one update launches for a stage (multi-tensor kernels: a fixed number per stage).
  int update_kernels() const;
};

// From the model parameters `optimizer` (sgd, momentum, adam) and `master_weights` (true/false).
OptimizerSpec optimizer_from_params(const Params& params);
std::string to_string(OptimizerKind kind);

}  // namespace pipetwin
