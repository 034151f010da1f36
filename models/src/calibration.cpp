// Calibration tables: JSON in and out, and the lookup the cost model uses.
#include "pipetwin/models/calibration.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/json_read.hpp"

namespace pipetwin {

Calibration calibration_from_json_text(const std::string& text, const std::string& source) {
  const nlohmann::json document = JsonReader::parse(text, source);
  const JsonReader root(document, source);
  root.check_keys({"format", "device", "device_name", "network", "samples", "concurrent", "pipeline_schedule", "co_run_slope", "co_run_share", "timed_footprint_bytes", "footprint_slowdown", "footprint_small_bytes", "footprint_large_bytes", "far_stash_distance_bytes", "cores", "task_overhead_s", "overheads_from_unmarked_twins", "layer_overhead_s", "kind_overhead_s", "stage_kind_overhead_s", "input_load_s", "copy_bytes_per_s", "core_copy_bytes_per_s", "ranks", "message_send_core_s",
                   "message_send_core_bytes_per_s", "message_receive_core_s", "message_receive_core_bytes_per_s",
                   "copy_latency_s", "handoff_s", "handoff_spin_s", "copy_seconds", "task_gap_s", "task_time_spread", "pipeline_copy_seconds", "reuse_extra_s_per_byte", "wait_extra_s_per_byte", "wait_curve_footprint_bytes", "layers"});
  if (root.get_string("format", "") != "pipetwin-calibration-1") {
    throw Error("calibration " + source + ": not a pipetwin calibration table (format pipetwin-calibration-1)");
  }
  // A time: a finite number >= 0 (NaN is not), or -1 where the table allows "not measured";
  // required where there is no fallback.
  const auto seconds = [&](const JsonReader& at, const std::string& key, std::optional<double> fallback,
                           bool may_be_unknown) {
    const double value = fallback ? at.get_double(key, *fallback) : at.get_double(key);
    if (!(std::isfinite(value) && (value >= 0 || (may_be_unknown && value == -1)))) {
      at.at(key).fail(may_be_unknown ? "seconds >= 0, or -1 for not measured" : "seconds >= 0");
    }
    return value;
  };
  // Seconds per compute task kind (optional; empty where absent).
  const auto kind_seconds = [&](const JsonReader& at, const std::string& key) {
    std::map<TaskKind, double> by_kind;
    if (!at.has(key)) return by_kind;
    const JsonReader kinds = at.at(key);
    kinds.require_object();
    for (const auto& item : kinds.value().items()) {
      TaskKind kind = TaskKind::X;
      try {
        kind = task_kind_from_string(item.key());
      } catch (const Error&) {
      }
      if (kind == TaskKind::X || kind == TaskKind::OFF || kind == TaskKind::ON) {
        kinds.at(item.key()).fail("a compute task's kind as the key (F, B, BA, BW, U or RC)");
      }
      by_kind[kind] = seconds(kinds, item.key(), std::nullopt, false);
    }
    return by_kind;
  };
  Calibration c;
  c.source = source;
  c.device = root.get_string("device");
  c.device_name = root.get_string("device_name", "");
  c.network = root.get_string("network");
  c.samples = root.get_int("samples");
  if (c.samples < 1) root.at("samples").fail("a positive number of samples");
  const std::int64_t concurrent = root.get_int("concurrent", 1);
  if (concurrent < 1 || concurrent > 4096) root.at("concurrent").fail("a number of copies from 1 to 4096");
  c.concurrent = static_cast<std::int32_t>(concurrent);
  c.pipeline_schedule = root.get_string("pipeline_schedule", "");
  if (!c.pipeline_schedule.empty() && c.concurrent < 2) {
    root.at("pipeline_schedule").fail("a pipeline of 2 or more processors (\"concurrent\")");
  }
  c.co_run_slope = root.get_double("co_run_slope", -1);
  if (!(std::isfinite(c.co_run_slope) && (c.co_run_slope >= 0 || c.co_run_slope == -1))) {
    root.at("co_run_slope").fail("a slope >= 0, or -1 for not measured");
  }
  c.co_run_share = root.get_double("co_run_share", -1);
  if (!(std::isfinite(c.co_run_share) && ((c.co_run_share >= 0 && c.co_run_share <= 1) || c.co_run_share == -1))) {
    root.at("co_run_share").fail("a share from 0 to 1, or -1 for not measured");
  }
  if ((c.co_run_slope >= 0 || c.co_run_share >= 0) && c.pipeline_schedule.empty()) {
    root.at(c.co_run_slope >= 0 ? "co_run_slope" : "co_run_share").fail("a table timed in a pipeline (\"pipeline_schedule\")");
  }
  c.timed_footprint_bytes = root.get_int("timed_footprint_bytes", 0);
  if (c.timed_footprint_bytes < 0) root.at("timed_footprint_bytes").fail("bytes >= 0 (0: not recorded)");
  c.footprint_slowdown = root.get_double("footprint_slowdown", -1);
  if (!(std::isfinite(c.footprint_slowdown) && (c.footprint_slowdown >= 0 || c.footprint_slowdown == -1))) {
    root.at("footprint_slowdown").fail("a fraction >= 0, or -1 for not measured");
  }
  c.footprint_small_bytes = root.get_int("footprint_small_bytes", 0);
  c.footprint_large_bytes = root.get_int("footprint_large_bytes", 0);
  if (c.footprint_slowdown >= 0 && !(c.footprint_small_bytes > 0 && c.footprint_large_bytes > c.footprint_small_bytes)) {
    root.at("footprint_slowdown").fail("footprints it was measured between: footprint_large_bytes above footprint_small_bytes > 0");
  }
  c.far_stash_distance_bytes = root.get_int("far_stash_distance_bytes", 0);
  if (c.far_stash_distance_bytes < 0) root.at("far_stash_distance_bytes").fail("bytes >= 0 (0: not measured)");
  const std::int64_t cores = root.get_int("cores", 0);
  if (cores < 0 || cores > 1048576) root.at("cores").fail("a number of CPUs from 0 (not recorded) to 1048576");
  c.cores = static_cast<std::int32_t>(cores);
  const std::int64_t ranks = root.get_int("ranks", 1);
  if (ranks < 1 || ranks > 1048576) root.at("ranks").fail("a number of MPI ranks from 1 to 1048576");
  c.ranks = static_cast<std::int32_t>(ranks);
  c.task_overhead_s = seconds(root, "task_overhead_s", 0.0, false);
  c.overheads_from_unmarked_twins = root.get_bool("overheads_from_unmarked_twins", false);
  c.layer_overhead_s = seconds(root, "layer_overhead_s", 0.0, false);
  c.input_load_s = seconds(root, "input_load_s", 0.0, false);
  c.kind_overhead_s = kind_seconds(root, "kind_overhead_s");
  c.stage_kind_overhead_s = kind_seconds(root, "stage_kind_overhead_s");
  c.copy_bytes_per_s = root.get_double("copy_bytes_per_s", 0.0);
  if (!(std::isfinite(c.copy_bytes_per_s) && c.copy_bytes_per_s >= 0)) root.at("copy_bytes_per_s").fail("bytes per second >= 0");
  c.core_copy_bytes_per_s = root.get_double("core_copy_bytes_per_s", 0.0);
  if (!(std::isfinite(c.core_copy_bytes_per_s) && c.core_copy_bytes_per_s >= 0)) {
    root.at("core_copy_bytes_per_s").fail("bytes per second >= 0");
  }
  c.copy_latency_s = seconds(root, "copy_latency_s", -1.0, true);
  // Copies by size: [[bytes, seconds], ...], sizes ascending.
  const auto copy_points = [&](const std::string& key, std::vector<std::pair<std::int64_t, double>>& into) {
    if (!root.has(key)) return;
    const JsonReader points = root.at(key);
    for (std::size_t i = 0; i < points.array_size(); ++i) {
      const JsonReader point = points.at(i);
      if (point.array_size() != 2) point.fail("[bytes, seconds]");
      const std::int64_t bytes = point.at(0).as_int();
      if (bytes < 1 || (!into.empty() && bytes <= into.back().first)) point.at(0).fail("a positive size above the previous point's");
      const double s = point.at(1).as_double();
      if (!(std::isfinite(s) && s > 0)) point.at(1).fail("a positive number of seconds");
      into.emplace_back(bytes, s);
    }
  };
  copy_points("copy_seconds", c.copy_seconds);
  copy_points("pipeline_copy_seconds", c.pipeline_copy_seconds);
  // The reuse curve: [[working-set bytes, extra seconds per byte], ...], sizes ascending.
  if (root.has("reuse_extra_s_per_byte")) {
    const JsonReader points = root.at("reuse_extra_s_per_byte");
    for (std::size_t i = 0; i < points.array_size(); ++i) {
      const JsonReader point = points.at(i);
      if (point.array_size() != 2) point.fail("[working-set bytes, extra seconds per byte]");
      const std::int64_t bytes = point.at(0).as_int();
      const auto& curve = c.reuse_extra_s_per_byte;
      if (bytes < 1 || (!curve.empty() && bytes <= curve.back().first)) point.at(0).fail("a positive size above the previous point's");
      const double s = point.at(1).as_double();
      if (!(std::isfinite(s) && s >= 0 && s < 1e-6)) point.at(1).fail("seconds per byte in [0, 1e-6)");
      c.reuse_extra_s_per_byte.emplace_back(bytes, s);
    }
  }
  // The wait curve: [[wait seconds, extra seconds per byte], ...], waits ascending.
  if (root.has("wait_extra_s_per_byte")) {
    const JsonReader points = root.at("wait_extra_s_per_byte");
    for (std::size_t i = 0; i < points.array_size(); ++i) {
      const JsonReader point = points.at(i);
      if (point.array_size() != 2) point.fail("[wait seconds, extra seconds per byte]");
      const double wait_s = point.at(0).as_double();
      const auto& curve = c.wait_curve.extra_s_per_byte;
      if (!(std::isfinite(wait_s) && wait_s > 0 && wait_s < 3600) || (!curve.empty() && wait_s <= curve.back().first)) {
        point.at(0).fail("a wait in seconds in (0, 3600), above the previous point's");
      }
      const double s = point.at(1).as_double();
      if (!(std::isfinite(s) && s >= 0 && s < 1e-6)) point.at(1).fail("seconds per byte in [0, 1e-6)");
      c.wait_curve.extra_s_per_byte.emplace_back(wait_s, s);
    }
  }
  c.wait_curve.footprint_bytes = root.get_int("wait_curve_footprint_bytes", 0);  // older tables: not known
  if (c.wait_curve.footprint_bytes < 0) root.at("wait_curve_footprint_bytes").fail("bytes >= 0 (0: not known)");
  c.task_gap_s = seconds(root, "task_gap_s", -1.0, true);  // tables from before it: not measured
  c.task_time_spread = root.get_double("task_time_spread", -1.0);  // likewise
  if (c.task_time_spread != -1.0 && !(std::isfinite(c.task_time_spread) && c.task_time_spread >= 0)) {
    root.at("task_time_spread").fail("a fraction >= 0");
  }
  c.handoff_s = seconds(root, "handoff_s", -1.0, true);
  c.handoff_spin_s = seconds(root, "handoff_spin_s", 0.0, false);
  c.message_send_core_s = seconds(root, "message_send_core_s", 0.0, false);
  c.message_receive_core_s = seconds(root, "message_receive_core_s", 0.0, false);
  for (const auto& [key, rate] : {std::make_pair("message_send_core_bytes_per_s", &c.message_send_core_bytes_per_s),
                                  std::make_pair("message_receive_core_bytes_per_s", &c.message_receive_core_bytes_per_s)}) {
    *rate = root.get_double(key, 0.0);
    if (!(std::isfinite(*rate) && *rate >= 0)) root.at(key).fail("bytes per second >= 0");
  }
  const JsonReader layers = root.at("layers");
  for (std::size_t i = 0; i < layers.array_size(); ++i) {
    const JsonReader layer = layers.at(i);
    layer.check_keys({"name", "F_s", "F_one_layer_s", "BW_dW_one_layer_s", "BA_s", "BW_s", "B_s", "U_s", "BA_to_linear_again_s",
                      "BA_to_linear_one_layer_s", "BW_to_linear_again_s", "assembly_s", "BA_fixed_s", "BA_dx_one_layer_s", "F_weights_reuse_s", "B_weights_reuse_s", "B_gradient_reuse_s", "U_reuse_s",
                      "timed_stash_distance_bytes", "far_F_factor", "far_B_factor"});
    LayerTimes t;
    t.forward_s = seconds(layer, "F_s", std::nullopt, false);
    t.forward_one_layer_s = seconds(layer, "F_one_layer_s", -1.0, true);  // older tables: not measured
    t.activation_grad_to_linear_one_layer_s = seconds(layer, "BA_to_linear_one_layer_s", -1.0, true);  // likewise
    t.weight_grad_dw_one_layer_s = seconds(layer, "BW_dW_one_layer_s", -1.0, true);  // likewise
    t.activation_grad_s = seconds(layer, "BA_s", std::nullopt, false);
    t.weight_grad_s = seconds(layer, "BW_s", std::nullopt, false);
    t.backward_s = seconds(layer, "B_s", -1.0, true);  // tables from before it: not measured
    t.update_s = seconds(layer, "U_s", std::nullopt, false);
    // Older tables: not measured.
    t.activation_grad_to_linear_again_s = seconds(layer, "BA_to_linear_again_s", -1.0, true);
    t.weight_grad_to_linear_again_s = seconds(layer, "BW_to_linear_again_s", -1.0, true);
    t.activation_grad_fixed_s = seconds(layer, "BA_fixed_s", -1.0, true);
    t.activation_grad_dx_one_layer_s = seconds(layer, "BA_dx_one_layer_s", -1.0, true);
    t.assembly_s = seconds(layer, "assembly_s", -1.0, true);
    t.forward_weights_reuse_s = seconds(layer, "F_weights_reuse_s", -1.0, true);
    t.backward_weights_reuse_s = seconds(layer, "B_weights_reuse_s", -1.0, true);
    t.backward_gradient_reuse_s = seconds(layer, "B_gradient_reuse_s", -1.0, true);
    t.update_reuse_s = seconds(layer, "U_reuse_s", -1.0, true);
    t.timed_stash_distance_bytes = layer.get_double("timed_stash_distance_bytes", -1);
    if (!(std::isfinite(t.timed_stash_distance_bytes) &&
          (t.timed_stash_distance_bytes >= 0 || t.timed_stash_distance_bytes == -1))) {
      layer.at("timed_stash_distance_bytes").fail("bytes >= 0, or -1 for not measured");
    }
    for (const auto& [key, factor] : {std::make_pair("far_F_factor", &t.far_forward_factor),
                                      std::make_pair("far_B_factor", &t.far_backward_factor)}) {
      *factor = layer.get_double(key, -1);
      if (!(std::isfinite(*factor) && (*factor >= 1 || *factor == -1))) layer.at(key).fail("a factor >= 1, or -1 for not measured");
    }
    const std::string name = layer.get_string("name");
    if (!c.layers.emplace(name, t).second) layer.at("name").fail("a layer not named before");
  }
  return c;
}

Calibration load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read calibration table " + path);
  std::stringstream text;
  text << in.rdbuf();
  return calibration_from_json_text(text.str(), path);
}

std::string calibration_to_json_text(const Calibration& c) {
  nlohmann::ordered_json j;
  j["format"] = "pipetwin-calibration-1";
  j["device"] = c.device;
  j["device_name"] = c.device_name;
  j["network"] = c.network;
  j["samples"] = c.samples;
  j["concurrent"] = c.concurrent;
  if (!c.pipeline_schedule.empty()) j["pipeline_schedule"] = c.pipeline_schedule;
  if (c.co_run_slope >= 0) j["co_run_slope"] = c.co_run_slope;
  if (c.co_run_share >= 0) j["co_run_share"] = c.co_run_share;
  if (c.timed_footprint_bytes > 0) j["timed_footprint_bytes"] = c.timed_footprint_bytes;
  if (c.footprint_slowdown >= 0) {
    j["footprint_slowdown"] = c.footprint_slowdown;
    j["footprint_small_bytes"] = c.footprint_small_bytes;
    j["footprint_large_bytes"] = c.footprint_large_bytes;
  }
  if (c.far_stash_distance_bytes > 0) j["far_stash_distance_bytes"] = c.far_stash_distance_bytes;
  j["cores"] = c.cores;
  j["task_overhead_s"] = c.task_overhead_s;
  if (c.overheads_from_unmarked_twins) j["overheads_from_unmarked_twins"] = true;
  j["layer_overhead_s"] = c.layer_overhead_s;
  for (const auto& [key, kinds] : {std::pair{"kind_overhead_s", &c.kind_overhead_s},
                                   std::pair{"stage_kind_overhead_s", &c.stage_kind_overhead_s}}) {
    if (kinds->empty()) continue;
    j[key] = nlohmann::ordered_json::object();
    for (const auto& [kind, s] : *kinds) j[key][to_string(kind)] = s;
  }
  if (c.input_load_s > 0) j["input_load_s"] = c.input_load_s;
  j["copy_bytes_per_s"] = c.copy_bytes_per_s;
  if (c.core_copy_bytes_per_s > 0) j["core_copy_bytes_per_s"] = c.core_copy_bytes_per_s;
  if (c.ranks > 1) {
    j["ranks"] = c.ranks;
    j["message_send_core_s"] = c.message_send_core_s;
    j["message_send_core_bytes_per_s"] = c.message_send_core_bytes_per_s;
    j["message_receive_core_s"] = c.message_receive_core_s;
    j["message_receive_core_bytes_per_s"] = c.message_receive_core_bytes_per_s;
  }
  j["copy_latency_s"] = c.copy_latency_s;
  if (!c.copy_seconds.empty()) {
    j["copy_seconds"] = nlohmann::ordered_json::array();
    for (const auto& [bytes, s] : c.copy_seconds) j["copy_seconds"].push_back({bytes, s});
  }
  if (!c.pipeline_copy_seconds.empty()) {
    j["pipeline_copy_seconds"] = nlohmann::ordered_json::array();
    for (const auto& [bytes, s] : c.pipeline_copy_seconds) j["pipeline_copy_seconds"].push_back({bytes, s});
  }
  if (!c.wait_curve.extra_s_per_byte.empty()) {
    j["wait_extra_s_per_byte"] = nlohmann::ordered_json::array();
    for (const auto& [wait_s, s] : c.wait_curve.extra_s_per_byte) j["wait_extra_s_per_byte"].push_back({wait_s, s});
  }
  if (c.wait_curve.footprint_bytes > 0) j["wait_curve_footprint_bytes"] = c.wait_curve.footprint_bytes;
  if (!c.reuse_extra_s_per_byte.empty()) {
    j["reuse_extra_s_per_byte"] = nlohmann::ordered_json::array();
    for (const auto& [bytes, s] : c.reuse_extra_s_per_byte) j["reuse_extra_s_per_byte"].push_back({bytes, s});
  }
  if (c.task_gap_s >= 0) j["task_gap_s"] = c.task_gap_s;
  if (c.task_time_spread >= 0) j["task_time_spread"] = c.task_time_spread;
  if (c.handoff_s >= 0) j["handoff_s"] = c.handoff_s;
  if (c.handoff_spin_s > 0) j["handoff_spin_s"] = c.handoff_spin_s;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& [name, t] : c.layers) {
    nlohmann::ordered_json layer = {{"name", name}, {"F_s", t.forward_s}, {"BA_s", t.activation_grad_s},
                                    {"BW_s", t.weight_grad_s}, {"B_s", t.backward_s}, {"U_s", t.update_s}};
    if (t.forward_one_layer_s >= 0) layer["F_one_layer_s"] = t.forward_one_layer_s;
    if (t.weight_grad_dw_one_layer_s >= 0) layer["BW_dW_one_layer_s"] = t.weight_grad_dw_one_layer_s;
    if (t.activation_grad_to_linear_one_layer_s >= 0) {
      layer["BA_to_linear_one_layer_s"] = t.activation_grad_to_linear_one_layer_s;
    }
    if (t.activation_grad_to_linear_again_s >= 0) layer["BA_to_linear_again_s"] = t.activation_grad_to_linear_again_s;
    if (t.weight_grad_to_linear_again_s >= 0) layer["BW_to_linear_again_s"] = t.weight_grad_to_linear_again_s;
    if (t.activation_grad_fixed_s >= 0) layer["BA_fixed_s"] = t.activation_grad_fixed_s;
    if (t.activation_grad_dx_one_layer_s >= 0) layer["BA_dx_one_layer_s"] = t.activation_grad_dx_one_layer_s;
    if (t.assembly_s >= 0) layer["assembly_s"] = t.assembly_s;
    if (t.forward_weights_reuse_s >= 0) layer["F_weights_reuse_s"] = t.forward_weights_reuse_s;
    if (t.backward_weights_reuse_s >= 0) layer["B_weights_reuse_s"] = t.backward_weights_reuse_s;
    if (t.backward_gradient_reuse_s >= 0) layer["B_gradient_reuse_s"] = t.backward_gradient_reuse_s;
    if (t.update_reuse_s >= 0) layer["U_reuse_s"] = t.update_reuse_s;
    if (t.timed_stash_distance_bytes >= 0) layer["timed_stash_distance_bytes"] = t.timed_stash_distance_bytes;
    if (t.far_forward_factor >= 1) layer["far_F_factor"] = t.far_forward_factor;
    if (t.far_backward_factor >= 1) layer["far_B_factor"] = t.far_backward_factor;
    j["layers"].push_back(std::move(layer));
  }
  return j.dump(2) + "\n";
}

double Calibration::copy_s(std::int64_t bytes) const {
  if (copy_seconds.empty()) return copy_bytes_per_s > 0 ? static_cast<double>(bytes) / copy_bytes_per_s : -1.0;
  const auto rate_of = [](const std::pair<std::int64_t, double>& point) { return static_cast<double>(point.first) / point.second; };
  if (bytes <= copy_seconds.front().first) return static_cast<double>(bytes) / rate_of(copy_seconds.front());
  if (bytes >= copy_seconds.back().first) return static_cast<double>(bytes) / rate_of(copy_seconds.back());
  std::size_t i = 1;
  while (copy_seconds[i].first < bytes) ++i;
  const auto& [b0, s0] = copy_seconds[i - 1];
  const auto& [b1, s1] = copy_seconds[i];
  return s0 + (s1 - s0) * static_cast<double>(bytes - b0) / static_cast<double>(b1 - b0);
}

double Calibration::reuse_extra_s(std::int64_t working_set_bytes, std::int64_t bytes) const {
  const auto& curve = reuse_extra_s_per_byte;
  if (curve.empty() || bytes <= 0) return 0;
  const auto per_byte = [&]() -> double {
    if (working_set_bytes < 0 || working_set_bytes >= curve.back().first) return curve.back().second;
    if (working_set_bytes <= curve.front().first) return curve.front().second;
    std::size_t i = 1;
    while (curve[i].first < working_set_bytes) ++i;
    const auto& [b0, s0] = curve[i - 1];
    const auto& [b1, s1] = curve[i];
    return s0 + (s1 - s0) * static_cast<double>(working_set_bytes - b0) / static_cast<double>(b1 - b0);
  };
  return per_byte() * static_cast<double>(bytes);
}

double Calibration::wait_extra_s(double wait_s, std::int64_t bytes) const {
  const auto& curve = wait_curve.extra_s_per_byte;
  if (curve.empty() || bytes <= 0 || !(wait_s > 0)) return 0;
  const auto per_byte = [&]() -> double {
    if (wait_s >= curve.back().first) return curve.back().second;
    double w0 = 0, s0 = 0;  // from nothing at no wait
    for (const auto& [w1, s1] : curve) {
      if (wait_s <= w1) return s0 + (s1 - s0) * (wait_s - w0) / (w1 - w0);
      w0 = w1;
      s0 = s1;
    }
    return curve.back().second;
  };
  return per_byte() * static_cast<double>(bytes);
}

double Calibration::pipeline_copy_extra_s() const {
  std::vector<double> extra_s;
  for (const auto& [bytes, s] : pipeline_copy_seconds) {
    const double alone_s = copy_s(bytes);
    if (alone_s >= 0) extra_s.push_back(std::max(0.0, s - alone_s));
  }
  if (extra_s.empty()) return 0;
  std::sort(extra_s.begin(), extra_s.end());
  return extra_s[extra_s.size() / 2];  // the upper median, as the profile's medians
}

double Calibration::sender_copy_s(std::int64_t bytes) const {
  for (const auto& [size, s] : pipeline_copy_seconds) {
    if (size == bytes) return s;
  }
  const double alone_s = copy_s(bytes);
  return alone_s >= 0 ? alone_s + pipeline_copy_extra_s() : -1.0;
}

double calibrated_seconds(const Calibration& c, const Layer& layer, TaskKind kind, std::int64_t samples) {
  const auto it = c.layers.find(layer.name);
  if (it == c.layers.end()) {
    throw Error("calibration " + c.source + " (measured on " + c.network + ") has no layer '" + layer.name + "'");
  }
  const LayerTimes& t = it->second;
  switch (kind) {
    case TaskKind::F:
    case TaskKind::RC:
      return c.scaled_s(t.forward_s, samples);
    case TaskKind::BA:
      return c.scaled_s(t.activation_grad_s, samples);
    case TaskKind::BW:
      return c.scaled_s(t.weight_grad_s, samples);
    case TaskKind::B:
      return c.scaled_s(t.fused_backward_s(), samples);
    case TaskKind::U:
      return t.update_s;
    default:
      throw Error(std::string("no calibrated time for task kind ") + to_string(kind));
  }
}

void check_calibration_covers(const Calibration& c, const Network& network) {
  for (const auto& layer : network.layers) {
    if (!c.layers.count(layer.name)) {
      throw Error("calibration " + c.source + " was measured on " + c.network + " and has no layer '" + layer.name +
                  "' of " + network.name + "; run pipetwin profile for this model");
    }
  }
}

}  // namespace pipetwin
