// Memory traffic and state of an optimizer update (optimizer.hpp). Counts are per parameter, each
// array read or written once by a fused multi-tensor kernel (apex/Megatron-LM's multi_tensor_apply).
#include "pipetwin/models/optimizer.hpp"

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {

std::int64_t OptimizerSpec::state_bytes_per_parameter() const {
  const std::int64_t moments = kind == OptimizerKind::adam ? 8 : kind == OptimizerKind::momentum ? 4 : 0;
  return moments + (master_weights ? 8 : 0);
}

double OptimizerSpec::update_bytes_per_parameter(std::int64_t element_bytes) const {
  const double e = static_cast<double>(element_bytes);
  // The update itself on weights w and gradient g of `w_bytes`: SGD reads w, g and writes w;
  // momentum also reads and writes its buffer; Adam reads and writes both moments (fp32).
  const double w_bytes = master_weights ? 4.0 : e;
  double bytes = 3 * w_bytes;
  if (kind == OptimizerKind::momentum) bytes += 2 * 4.0;
  if (kind == OptimizerKind::adam) bytes += 4 * 4.0;
  if (master_weights) {
    // Gradients to fp32 (read e, write 4), the overflow check and the gradient norm (read 4 each),
    // the master weights back to the model's precision (read 4, write e).
    // And the model's gradients zeroed for the next step (e).
    bytes += (e + 4) + 4 + 4 + (4 + e) + e;
  }
  return bytes;
}

// The update; with master weights also the cast to fp32, the overflow check, the norm, the copy
// back and the gradients zeroed.
int OptimizerSpec::update_kernels() const { return master_weights ? 6 : 1; }

OptimizerSpec optimizer_from_params(const Params& params) {
  OptimizerSpec spec;
  const std::string kind = params.get_string("optimizer", "sgd");
  if (kind == "sgd") {
    spec.kind = OptimizerKind::sgd;
  } else if (kind == "momentum") {
    spec.kind = OptimizerKind::momentum;
  } else if (kind == "adam") {
    spec.kind = OptimizerKind::adam;
  } else {
    throw Error(unknown_name_message("optimizer", kind, {"sgd", "momentum", "adam"}));
  }
  spec.master_weights = params.get_bool("master_weights", false);
  return spec;
}

std::string to_string(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::momentum: return "momentum";
    case OptimizerKind::adam: return "adam";
  }
  return "?";
}

}  // namespace pipetwin
