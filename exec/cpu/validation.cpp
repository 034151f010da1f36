// validate() measured by the CPU executor.
#include "pipetwin/exec/cpu/validation.hpp"

#include "pipetwin/exec/cpu/cpu_executor.hpp"

namespace pipetwin::cpu {

ValidationReport validate_cpu(const GraphConfig& config, const Dataset& data, const ValidationOptions& options,
                              const Predictor& predict) {
  return validate(config, data, options, predict, run_cpu);
}

}  // namespace pipetwin::cpu
