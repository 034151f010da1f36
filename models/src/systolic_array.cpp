// Cycles of layer tasks on a systolic array. The fold counts and per-fold cycles are SCALE-Sim
// v2's (scalesim 3.0.0, compute/systolic_compute_{os,ws,is}.py: the length of its demand
// matrices); experiments/systolic_vs_scalesim.py checks them against it layer by layer.
#include "pipetwin/models/systolic_array.hpp"

#include <algorithm>
#include <cmath>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/models/params.hpp"

namespace pipetwin {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A setting that must be positive, parsed by the project's number parsers (params.hpp).
std::int64_t positive_int(const std::map<std::string, std::string>& settings, const std::string& key,
                          std::int64_t fallback) {
  const auto it = settings.find(key);
  if (it == settings.end()) return fallback;
  const std::int64_t value = parse_int(it->second, "systolic accelerator: " + key);
  if (value <= 0) throw Error("systolic accelerator: " + key + " must be a positive integer, got '" + it->second + "'");
  return value;
}

double positive_number(const std::map<std::string, std::string>& settings, const std::string& key, double fallback) {
  const auto it = settings.find(key);
  if (it == settings.end()) return fallback;
  const double value = parse_double(it->second, "systolic accelerator: " + key);
  if (!(value > 0) || !std::isfinite(value)) {
    throw Error("systolic accelerator: " + key + " must be a positive number, got '" + it->second + "'");
  }
  return value;
}

// The convolution's output height and width before pooling.
std::pair<std::int64_t, std::int64_t> conv_output_hw(const Layer& layer) {
  const Conv2dSpec& c = layer.conv2d;
  return {(layer.input_shape[1] + 2 * c.padding - c.kernel) / c.stride + 1,
          (layer.input_shape[2] + 2 * c.padding - c.kernel) / c.stride + 1};
}

double gemm_macs(const std::vector<ArrayGemm>& gemms) {
  double macs = 0;
  for (const auto& g : gemms) macs += static_cast<double>(g.m) * static_cast<double>(g.k) * static_cast<double>(g.n);
  return macs;
}

}  // namespace

const char* to_string(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::output_stationary: return "os";
    case Dataflow::weight_stationary: return "ws";
    case Dataflow::input_stationary: return "is";
  }
  return "?";
}

Dataflow dataflow_from_string(const std::string& text) {
  if (text == "os") return Dataflow::output_stationary;
  if (text == "ws") return Dataflow::weight_stationary;
  if (text == "is") return Dataflow::input_stationary;
  throw Error(unknown_name_message("dataflow", text, {"os", "ws", "is"}));
}

SystolicSpec systolic_spec_from_settings(const std::map<std::string, std::string>& settings, double clock_hz) {
  // Only the names are checked here; the defaults are SystolicSpec's.
  Params(settings).check_known({{"rows", "", "rows of MAC cells"},
                                {"cols", "", "columns of MAC cells"},
                                {"dataflow", "", "os, ws or is"},
                                {"word_bytes", "", "bytes of one operand element"},
                                {"ifmap_sram_bytes", "", "input SRAM"},
                                {"filter_sram_bytes", "", "weight SRAM"},
                                {"ofmap_sram_bytes", "", "output SRAM"},
                                {"dram_bytes_per_s", "", "DRAM bandwidth to the SRAMs"},
                                {"vector_ops_per_cycle", "", "element-wise operations per cycle"},
                                {"source", "", "where the figures come from (text)"}},
                               "the systolic accelerator");
  SystolicSpec spec;
  spec.rows = positive_int(settings, "rows", spec.rows);
  spec.cols = positive_int(settings, "cols", spec.cols);
  const auto dataflow = settings.find("dataflow");
  if (dataflow != settings.end()) spec.dataflow = dataflow_from_string(dataflow->second);
  spec.word_bytes = positive_int(settings, "word_bytes", spec.word_bytes);
  spec.ifmap_sram_bytes = positive_int(settings, "ifmap_sram_bytes", spec.ifmap_sram_bytes);
  spec.filter_sram_bytes = positive_int(settings, "filter_sram_bytes", spec.filter_sram_bytes);
  spec.ofmap_sram_bytes = positive_int(settings, "ofmap_sram_bytes", spec.ofmap_sram_bytes);
  spec.dram_bytes_per_cycle = positive_number(settings, "dram_bytes_per_s", spec.dram_bytes_per_cycle * clock_hz) / clock_hz;
  spec.vector_ops_per_cycle = positive_number(settings, "vector_ops_per_cycle", static_cast<double>(spec.cols));
  if (spec.rows > (1 << 16) || spec.cols > (1 << 16)) {
    throw Error("systolic accelerator: rows and cols must be at most 65536, got " + std::to_string(spec.rows) + "x" +
                std::to_string(spec.cols));
  }
  return spec;
}

std::int64_t gemm_compute_cycles(const ArrayGemm& g, const SystolicSpec& s) {
  if (g.m <= 0 || g.k <= 0 || g.n <= 0) return 0;
  const std::int64_t r = s.rows, c = s.cols;
  switch (s.dataflow) {
    case Dataflow::output_stationary:
      // A fold is an r x c block of outputs: k operands stream in, skewed over r rows, and the
      // results drain over c columns.
      return ceil_div(g.m, r) * ceil_div(g.n, c) * (g.k + r + c - 2);
    case Dataflow::weight_stationary:
      // A fold is an r x c block of weights (k x n): loading takes r cycles, then m inputs stream
      // with an r-row skew and partial sums drain over c columns.
      return ceil_div(g.k, r) * ceil_div(g.n, c) * (g.m + 2 * r + c - 2);
    case Dataflow::input_stationary:
      // A fold is an r x c block of inputs (k x m): the same, with the n filters streaming.
      return ceil_div(g.k, r) * ceil_div(g.m, c) * (g.n + 2 * r + c - 2);
  }
  return 0;
}

double gemm_dram_words(const ArrayGemm& g, const SystolicSpec& s) {
  if (g.m <= 0 || g.k <= 0 || g.n <= 0) return 0;
  const double m = static_cast<double>(g.m), k = static_cast<double>(g.k), n = static_cast<double>(g.n);
  const double word = static_cast<double>(s.word_bytes);
  // Folds over the outputs' rows and columns, whatever stays in the array.
  const double row_folds = std::ceil(m / static_cast<double>(s.rows));
  const double col_folds = std::ceil(n / static_cast<double>(s.cols));
  const bool inputs_fit = m * k * word <= static_cast<double>(s.ifmap_sram_bytes) / 2;
  const bool filters_fit = k * n * word <= static_cast<double>(s.filter_sram_bytes) / 2;
  return m * k * (inputs_fit ? 1 : col_folds) + k * n * (filters_fit ? 1 : row_folds) + m * n;
}

double gemm_dram_cycles(const ArrayGemm& gemm, const SystolicSpec& spec) {
  return gemm_dram_words(gemm, spec) * static_cast<double>(spec.word_bytes) / spec.dram_bytes_per_cycle;
}

std::vector<ArrayGemm> layer_gemms(const Layer& layer, TaskKind kind, std::int64_t samples) {
  if (kind == TaskKind::RC) kind = TaskKind::F;
  if (kind == TaskKind::B) {
    auto gemms = layer_gemms(layer, TaskKind::BA, samples);
    const auto weight = layer_gemms(layer, TaskKind::BW, samples);
    gemms.insert(gemms.end(), weight.begin(), weight.end());
    return gemms;
  }
  if (kind != TaskKind::F && kind != TaskKind::BA && kind != TaskKind::BW) return {};
  std::int64_t m = 0, k = 0, n = 0, groups = 1;
  if (layer.type == "conv2d") {
    const Conv2dSpec& c = layer.conv2d;
    const auto [out_h, out_w] = conv_output_hw(layer);
    groups = c.groups;
    const std::int64_t in_per_group = layer.input_shape[0] / groups;
    // A sparse connection table (LeNet-5's C3) connects each output map to connections/out maps.
    const std::int64_t inputs_per_output =
        c.connections > 0 ? ceil_div(c.connections, c.out_channels) : in_per_group;
    m = samples * out_h * out_w;            // output pixels
    k = c.kernel * c.kernel * inputs_per_output;  // the window
    n = c.out_channels / groups;            // filters
  } else if (layer.type == "dense") {
    m = samples;
    k = shape_elements(layer.input_shape);
    n = layer.dense.out_features;
  } else {
    throw Error("the systolic accelerator models conv2d and dense layers; layer '" + layer.name + "' is " +
                layer.type);
  }
  ArrayGemm gemm;
  if (kind == TaskKind::F) gemm = {m, k, n};        // Y = X W
  if (kind == TaskKind::BA) gemm = {m, n, k};       // dX = dY W^T (then col2im)
  if (kind == TaskKind::BW) gemm = {k, m, n};       // dW = X^T dY
  return std::vector<ArrayGemm>(static_cast<std::size_t>(groups), gemm);
}

std::int64_t systolic_layer_cycles(const Layer& layer, TaskKind kind, std::int64_t samples, const SystolicSpec& spec) {
  if (kind == TaskKind::U) {
    // Read weights and gradients, write weights: element-wise, and DRAM traffic for the three.
    const double p = static_cast<double>(layer.parameters);
    const double vector = 2 * p / spec.vector_ops_per_cycle;
    const double dram = 3 * p * static_cast<double>(spec.word_bytes) / spec.dram_bytes_per_cycle;
    return static_cast<std::int64_t>(std::ceil(std::max(vector, dram)));
  }
  if (kind == TaskKind::B) {
    return systolic_layer_cycles(layer, TaskKind::BA, samples, spec) +
           systolic_layer_cycles(layer, TaskKind::BW, samples, spec);
  }
  const auto gemms = layer_gemms(layer, kind, samples);
  double cycles = 0;
  for (const auto& g : gemms) {
    const double compute = static_cast<double>(gemm_compute_cycles(g, spec));
    cycles += std::max(compute, gemm_dram_cycles(g, spec));
  }
  // What the layer's FLOP count has beyond its GEMMs (bias, normalisation, ReLU, pooling).
  const double flops = kind == TaskKind::BA   ? layer.activation_grad_flops
                       : kind == TaskKind::BW ? layer.weight_grad_flops
                                              : layer.forward_flops;
  const double elementwise = std::max(0.0, flops * static_cast<double>(samples) - 2 * gemm_macs(gemms));
  cycles += elementwise / spec.vector_ops_per_cycle;
  return static_cast<std::int64_t>(std::ceil(cycles));
}

}  // namespace pipetwin
