// How a layer's time grows with the other processors' busy share of it, inside one pipeline run
// (co_run_slope.hpp).
#include "pipetwin/exec/co_run_slope.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "pipetwin/models/error.hpp"

namespace pipetwin {

std::vector<double> other_busy_shares(const TaskGraph& graph, const Result& result) {
  if (result.tasks.size() != graph.tasks.size()) {
    throw Error("internal: other_busy_shares needs one time per task (" + std::to_string(graph.tasks.size()) + " tasks, " +
                std::to_string(result.tasks.size()) + " times)");
  }
  std::vector<double> shares(graph.tasks.size(), 0.0);
  const std::int32_t processors = graph.processor_count();
  if (processors < 2) return shares;
  // Per processor its tasks' (start, end), by start: a processor runs one task at a time.
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> spans(static_cast<std::size_t>(processors));
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    const TaskTiming& time = result.tasks[static_cast<std::size_t>(t.id)];
    if (time.end_cycles > time.start_cycles) spans[static_cast<std::size_t>(t.resource)].emplace_back(time.start_cycles, time.end_cycles);
  }
  for (auto& s : spans) std::sort(s.begin(), s.end());
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    const TaskTiming& time = result.tasks[static_cast<std::size_t>(t.id)];
    if (time.end_cycles <= time.start_cycles) continue;
    double overlap = 0;
    for (std::int32_t q = 0; q < processors; ++q) {
      if (q == t.resource) continue;
      const auto& other = spans[static_cast<std::size_t>(q)];
      // The first of q's tasks that ends after this one starts (q's tasks do not overlap, so
      // their ends are in the order of their starts).
      auto it = std::upper_bound(other.begin(), other.end(), time.start_cycles,
                                 [](std::int64_t at, const std::pair<std::int64_t, std::int64_t>& s) { return at < s.second; });
      for (; it != other.end() && it->first < time.end_cycles; ++it) {
        overlap += static_cast<double>(std::min(time.end_cycles, it->second) - std::max(time.start_cycles, it->first));
      }
    }
    shares[static_cast<std::size_t>(t.id)] =
        overlap / (static_cast<double>(processors - 1) * static_cast<double>(time.end_cycles - time.start_cycles));
  }
  return shares;
}

CoRunFit fit_co_run(const TaskGraph& graph, const TrainingRun& run, std::int32_t skip_minibatches) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Per (processor, layer, kind), the seconds of its layer times with their tasks' shares.
  const std::vector<double> shares = other_busy_shares(graph, run.result);
  std::map<std::tuple<std::int32_t, std::int32_t, TaskKind>, std::vector<std::pair<double, double>>> samples;
  for (const auto& time : run.layer_times) {
    if (time.task < 0 || static_cast<std::size_t>(time.task) >= graph.tasks.size()) continue;
    const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
    if (t.minibatch < skip_minibatches || time.kind != t.kind || t.kind == TaskKind::U || time.layer < 0) continue;
    samples[{t.resource, time.layer, t.kind}].emplace_back(time.seconds, shares[static_cast<std::size_t>(t.id)]);
  }
  // Per key the least-squares line of its seconds against the share, its slope over its mean
  // (the relative slope r_k = b_k / mean_k) and its mean share x_k. A key whose times are exactly
  // a_k (1 + s x) has r_k = s / (1 + s x_k), so the slope s is the one whose relative slopes,
  // averaged as the keys' are (each weighted by how much its shares vary, n times their variance:
  // a key whose tasks all overlap alike says nothing), give the keys' averaged r. Averaged before
  // the division, not after: a key's own slope over its intercept (b_k / (mean_k - b_k x_k), the
  // way until 2026-11-28) explodes where noise brings its line near 0 at share 0. With that way
  // an H100's 8-processor tables had slopes of 0.31, 0.74, 1.11, 1.57, 4.96 and 0.73 in six
  // rounds of one validation, and its sequential row's prediction 237 to 90 ms (the runs
  // themselves were unsteady that day: docs/cuda-executor.md, "a fourth time").
  struct Key {
    double weight, mean_share;
  };
  std::vector<Key> keys;
  double weighted_share = 0, total_s = 0, weights = 0, mean_relative_slope = 0;
  for (const auto& [key, points] : samples) {
    const auto n = static_cast<double>(points.size());
    double mean_x = 0, mean_y = 0;
    for (const auto& [seconds, share] : points) {
      mean_x += share / n;
      mean_y += seconds / n;
      weighted_share += seconds * share;
      total_s += seconds;
    }
    double sxx = 0, sxy = 0;
    for (const auto& [seconds, share] : points) {
      sxx += (share - mean_x) * (share - mean_x);
      sxy += (share - mean_x) * (seconds - mean_y);
    }
    if (!(sxx > 1e-12 * n) || !(mean_y > 0)) continue;
    keys.push_back({sxx, mean_x});
    weights += sxx;
    mean_relative_slope += sxy / mean_y;
  }
  const double share = total_s > 0 ? weighted_share / total_s : nan;
  if (!(weights > 0)) return {nan, share};
  mean_relative_slope /= weights;
  // The keys' averaged relative slope at slope s; it rises with s, from -infinity just above
  // -1 / (the largest mean share) to the average of 1 / x_k as s grows without bound.
  const auto relative_slope_at = [&](double s) {
    double sum = 0;
    for (const auto& k : keys) sum += k.weight * s / (1 + s * k.mean_share);
    return sum / weights;
  };
  double largest_share = 0;  // > 0: a key's shares vary, so their mean is above 0
  for (const auto& k : keys) largest_share = std::max(largest_share, k.mean_share);
  double lo = 0, hi = 0;
  if (mean_relative_slope < 0) {
    lo = -1 / largest_share;  // the averaged relative slope falls without bound towards it
  } else {
    hi = 1;
    // Doubled up to a slope of 1e6 (a layer a million times slower beside the others): beyond it
    // the data says the layers would take no time alone, and nothing is measured.
    while (relative_slope_at(hi) < mean_relative_slope) {
      if (hi > 1e6) return {nan, share};
      lo = hi;
      hi *= 2;
    }
  }
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(hi)); ++i) {
    const double mid = lo / 2 + hi / 2;
    (relative_slope_at(mid) < mean_relative_slope ? lo : hi) = mid;
  }
  return {lo / 2 + hi / 2, share};
}

}  // namespace pipetwin
