// Calibration tables: JSON in and out, and the lookup the cost model uses.
#include "pipetwin/models/calibration.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipetwin/models/error.hpp"

namespace pipetwin {

Calibration calibration_from_json_text(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("calibration " + source + ": not JSON: " + e.what());
  }
  Calibration c;
  c.source = source;
  try {
    if (j.value("format", std::string()) != "pipetwin-calibration-1") {
      throw Error("calibration " + source + ": not a pipetwin calibration table (format pipetwin-calibration-1)");
    }
    c.device = j.at("device").get<std::string>();
    c.device_name = j.value("device_name", std::string());
    c.network = j.at("network").get<std::string>();
    c.samples = j.at("samples").get<std::int64_t>();
    c.task_overhead_s = j.value("task_overhead_s", 0.0);
    c.copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
    c.copy_latency_s = j.value("copy_latency_s", -1.0);
    for (const auto& layer : j.at("layers")) {
      LayerTimes t;
      t.forward_s = layer.at("F_s").get<double>();
      t.activation_grad_s = layer.at("BA_s").get<double>();
      t.weight_grad_s = layer.at("BW_s").get<double>();
      t.update_s = layer.at("U_s").get<double>();
      if (t.forward_s < 0 || t.activation_grad_s < 0 || t.weight_grad_s < 0 || t.update_s < 0) {
        throw Error("calibration " + source + ": negative time for layer " + layer.at("name").get<std::string>());
      }
      c.layers[layer.at("name").get<std::string>()] = t;
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error("calibration " + source + ": " + e.what());
  }
  if (c.samples < 1) throw Error("calibration " + source + ": samples must be positive");
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
  j["task_overhead_s"] = c.task_overhead_s;
  j["copy_bytes_per_s"] = c.copy_bytes_per_s;
  j["copy_latency_s"] = c.copy_latency_s;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& [name, t] : c.layers) {
    j["layers"].push_back({{"name", name}, {"F_s", t.forward_s}, {"BA_s", t.activation_grad_s},
                           {"BW_s", t.weight_grad_s}, {"U_s", t.update_s}});
  }
  return j.dump(2) + "\n";
}

double calibrated_seconds(const Calibration& c, const Layer& layer, TaskKind kind, std::int64_t samples) {
  const auto it = c.layers.find(layer.name);
  if (it == c.layers.end()) {
    throw Error("calibration " + c.source + " (measured on " + c.network + ") has no layer '" + layer.name + "'");
  }
  const LayerTimes& t = it->second;
  const double scale = static_cast<double>(samples) / static_cast<double>(c.samples);
  switch (kind) {
    case TaskKind::F:
    case TaskKind::RC:
      return t.forward_s * scale;
    case TaskKind::BA:
      return t.activation_grad_s * scale;
    case TaskKind::BW:
      return t.weight_grad_s * scale;
    case TaskKind::B:
      return (t.activation_grad_s + t.weight_grad_s) * scale;
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
