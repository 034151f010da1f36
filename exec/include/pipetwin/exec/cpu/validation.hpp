// Predicted against measured on the CPU executor (pipetwin/exec/validation.hpp).
#pragma once
#include "pipetwin/exec/validation.hpp"

namespace pipetwin::cpu {

// validate() measured by the CPU executor.
ValidationReport validate_cpu(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                              const Predictor& predict);

}  // namespace pipetwin::cpu
