// A calibration table between two measured ones: the table taken alone and the one taken with P
// copies at once (every processor busy), mixed linearly by how many of the other processors a
// pipeline's tasks see busy (blend_calibrations in calibration.hpp); and a table's compute times
// scaled (with_compute_scaled), for a pipeline that overlaps more or less than the one timed.
#include <cmath>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

Calibration blend_calibrations(const Calibration& alone, const Calibration& together, double weight) {
  if (!(weight >= 0 && weight <= 1)) {
    throw Error("blend_calibrations: the weight must be in [0, 1], got " + std::to_string(weight));
  }
  const auto mix = [weight](double a, double b) { return a + weight * (b - a); };
  Calibration blended = together;
  blended.task_overhead_s = mix(alone.task_overhead_s, together.task_overhead_s);
  blended.layer_overhead_s = mix(alone.layer_overhead_s, together.layer_overhead_s);
  blended.input_load_s = mix(alone.input_load_s, together.input_load_s);
  blended.kind_overhead_s.clear();  // each kind either table timed apart, mixed with the other's for that kind
  for (const auto* table : {&alone, &together}) {
    for (const auto& [kind, s] : table->kind_overhead_s) {
      blended.kind_overhead_s[kind] = mix(alone.task_overhead_s_of(kind), together.task_overhead_s_of(kind));
    }
  }
  for (auto& [name, times] : blended.layers) {
    const auto it = alone.layers.find(name);
    if (it == alone.layers.end()) {
      throw Error("blend_calibrations: layer " + name + " is in the table taken at once but not in the one taken alone");
    }
    const LayerTimes& a = it->second;
    times.forward_s = mix(a.forward_s, times.forward_s);
    times.activation_grad_s = mix(a.activation_grad_s, times.activation_grad_s);
    times.weight_grad_s = mix(a.weight_grad_s, times.weight_grad_s);
    times.backward_s = a.backward_s >= 0 && times.backward_s >= 0 ? mix(a.backward_s, times.backward_s) : -1;
    times.update_s = mix(a.update_s, times.update_s);
    for (auto field : {&LayerTimes::activation_grad_to_linear_again_s, &LayerTimes::weight_grad_to_linear_again_s}) {
      times.*field = a.*field >= 0 && times.*field >= 0 ? mix(a.*field, times.*field) : -1;  // where both measured it
    }
  }
  return blended;
}

Calibration with_compute_scaled(const Calibration& calibration, double factor) {
  if (!(std::isfinite(factor) && factor > 0)) {
    throw Error("with_compute_scaled: the factor must be a positive number, got " + std::to_string(factor));
  }
  Calibration scaled = calibration;
  const auto scale = [factor](double& s) {
    if (s > 0) s *= factor;  // -1 (not measured) stays
  };
  scale(scaled.task_overhead_s);
  scale(scaled.layer_overhead_s);
  scale(scaled.input_load_s);
  for (auto& [kind, s] : scaled.kind_overhead_s) scale(s);
  for (auto& [name, times] : scaled.layers) {
    for (double* s : {&times.forward_s, &times.activation_grad_s, &times.weight_grad_s, &times.backward_s, &times.update_s,
                      &times.activation_grad_to_linear_again_s, &times.weight_grad_to_linear_again_s}) {
      scale(*s);
    }
  }
  return scaled;
}

}  // namespace pipetwin
