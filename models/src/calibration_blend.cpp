// A calibration table between two measured ones: the table taken alone and the one taken with P
// copies at once (every processor busy), mixed linearly by how many of the other processors a
// pipeline's tasks see busy (blend_calibrations in calibration.hpp); and a table's compute times
// scaled (with_compute_scaled), for a pipeline that overlaps more or less than the one timed; and
// the stash term's share and its table (stash_far_share, with_far_share), for a graph whose
// processors hold their stashes longer than the timed run's.
#include <algorithm>
#include <cmath>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

// A table's compute times, beside the per-kind overheads: what a blend mixes and a scaling scales
// (copies and links are neither).
constexpr double Calibration::*kTableComputeTimes[] = {&Calibration::task_overhead_s, &Calibration::layer_overhead_s,
                                                       &Calibration::input_load_s};
// A layer's, each with whether -1 stands for "not measured" there, and which pass it times (what
// the stash term moves by its forward or its backward factor; not an update).
enum class LayerPass { forward, backward, update };
struct LayerComputeTime {
  double LayerTimes::*seconds;
  bool may_be_unmeasured;
  LayerPass pass;
};
constexpr LayerComputeTime kLayerComputeTimes[] = {
    {&LayerTimes::forward_s, false, LayerPass::forward},
    {&LayerTimes::forward_one_layer_s, true, LayerPass::forward},
    {&LayerTimes::weight_grad_dw_one_layer_s, true, LayerPass::backward},
    {&LayerTimes::activation_grad_to_linear_one_layer_s, true, LayerPass::backward},
    {&LayerTimes::activation_grad_s, false, LayerPass::backward},
    {&LayerTimes::weight_grad_s, false, LayerPass::backward},
    {&LayerTimes::backward_s, true, LayerPass::backward},
    {&LayerTimes::update_s, false, LayerPass::update},
    {&LayerTimes::activation_grad_to_linear_again_s, true, LayerPass::backward},
    {&LayerTimes::weight_grad_to_linear_again_s, true, LayerPass::backward},
    {&LayerTimes::activation_grad_fixed_s, true, LayerPass::backward},
    {&LayerTimes::activation_grad_dx_one_layer_s, true, LayerPass::backward},
    {&LayerTimes::assembly_s, true, LayerPass::backward},
};

}  // namespace

Calibration blend_calibrations(const Calibration& alone, const Calibration& together, double weight) {
  if (!(weight >= 0 && weight <= 1)) {
    throw Error("blend_calibrations: the weight must be in [0, 1], got " + std::to_string(weight));
  }
  const auto mix = [weight](double a, double b) { return a + weight * (b - a); };
  Calibration blended = together;
  for (const auto seconds : kTableComputeTimes) blended.*seconds = mix(alone.*seconds, together.*seconds);
  // Timed between the two footprints too, where both are known.
  if (alone.timed_footprint_bytes > 0 && together.timed_footprint_bytes > 0) {
    blended.timed_footprint_bytes = static_cast<std::int64_t>(
        std::llround(mix(static_cast<double>(alone.timed_footprint_bytes), static_cast<double>(together.timed_footprint_bytes))));
  }

  // Between tasks: mixed where both tables timed it, else the one that did.
  if (alone.task_gap_s >= 0 && together.task_gap_s >= 0) {
    blended.task_gap_s = mix(alone.task_gap_s, together.task_gap_s);
  } else if (alone.task_gap_s >= 0) {
    blended.task_gap_s = alone.task_gap_s;
  }
  blended.kind_overhead_s.clear();  // each kind either table timed apart, mixed with the other's for that kind
  blended.stage_kind_overhead_s.clear();
  for (const auto* table : {&alone, &together}) {
    for (const auto& [kind, s] : table->kind_overhead_s) {
      blended.kind_overhead_s[kind] = mix(alone.task_overhead_s_of(kind), together.task_overhead_s_of(kind));
    }
    for (const auto& [kind, s] : table->stage_kind_overhead_s) {
      blended.stage_kind_overhead_s[kind] = mix(alone.stage_task_overhead_s_of(kind), together.stage_task_overhead_s_of(kind));
    }
  }
  for (auto& [name, times] : blended.layers) {
    const auto it = alone.layers.find(name);
    if (it == alone.layers.end()) {
      throw Error("blend_calibrations: layer " + name + " is in the table taken at once but not in the one taken alone");
    }
    const LayerTimes& a = it->second;
    for (const auto& [seconds, may_be_unmeasured, pass] : kLayerComputeTimes) {
      const bool both_measured = a.*seconds >= 0 && times.*seconds >= 0;
      times.*seconds = !may_be_unmeasured || both_measured ? mix(a.*seconds, times.*seconds) : -1;
    }
    // The weights' reuse as the two timed runs had it, mixed as their times are (not scaled by
    // with_compute_scaled: the reuse model's seconds are not the table's compute).
    for (const auto reuse_s : {&LayerTimes::forward_weights_reuse_s, &LayerTimes::backward_weights_reuse_s,
                               &LayerTimes::backward_gradient_reuse_s, &LayerTimes::update_reuse_s}) {
      times.*reuse_s = a.*reuse_s >= 0 && times.*reuse_s >= 0 ? mix(a.*reuse_s, times.*reuse_s) : -1;
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
  for (const auto seconds : kTableComputeTimes) scale(scaled.*seconds);
  for (auto* kinds : {&scaled.kind_overhead_s, &scaled.stage_kind_overhead_s}) {
    for (auto& [kind, s] : *kinds) scale(s);
  }
  for (auto& [name, times] : scaled.layers) {
    for (const auto& field : kLayerComputeTimes) scale(times.*field.seconds);
  }
  return scaled;
}

double stash_far_share(const std::vector<double>& distance_bytes, const std::vector<double>& timed_distance_bytes,
                       double far_bytes, double floor_bytes) {
  if (!(floor_bytes > 0)) throw Error("stash_far_share: the floor must be a positive number of bytes");
  const double far = std::max(far_bytes, floor_bytes);
  double share = 0;
  for (std::size_t p = 0; p < distance_bytes.size() && p < timed_distance_bytes.size(); ++p) {
    if (distance_bytes[p] < 0 || timed_distance_bytes[p] < 0) continue;  // reads back no stash of its own
    const double timed = std::max(timed_distance_bytes[p], floor_bytes);
    if (!(far > timed)) continue;  // the far point no farther than the table: nothing to go by
    const double own = std::max(distance_bytes[p], floor_bytes);
    share = std::max(share, std::clamp(std::log(own / timed) / std::log(far / timed), 0.0, 1.0));
  }
  return share;
}

double stash_distance_floor_bytes(const Calibration& calibration) {
  constexpr double kNoCurveFloorBytes = 1 << 20;
  const auto& curve = calibration.reuse_extra_s_per_byte;
  if (curve.empty() || !(curve.back().second > 0)) return kNoCurveFloorBytes;
  for (const auto& [bytes, s] : curve) {
    if (s >= curve.back().second / 2) return static_cast<double>(std::max<std::int64_t>(bytes, 1));
  }
  return static_cast<double>(curve.back().first);
}

Calibration with_far_share(const Calibration& calibration, double share) {
  if (!(share >= 0 && share <= 1)) {
    throw Error("with_far_share: the share must be in [0, 1], got " + std::to_string(share));
  }
  Calibration moved = calibration;
  for (auto& [name, times] : moved.layers) {
    if (times.far_forward_factor < 1 || times.far_backward_factor < 1) continue;  // no far point
    const double forward = 1 + share * (times.far_forward_factor - 1), backward = 1 + share * (times.far_backward_factor - 1);
    for (const auto& field : kLayerComputeTimes) {
      if (field.pass == LayerPass::update || !(times.*field.seconds > 0)) continue;  // -1 (not measured) stays
      times.*field.seconds *= field.pass == LayerPass::forward ? forward : backward;
    }
  }
  return moved;
}

}  // namespace pipetwin
