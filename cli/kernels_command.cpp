// `pipetwin kernels`: the GPU kernels the operator-level cost model times for each layer of a
// network, with the cuBLAS tile, split-K and waves of each GEMM, so a prediction can be read
// kernel by kernel (and checked against a profiler's trace); on a systolic-array profile, each
// layer task's GEMMs with their fold cycles and DRAM cycles.
#include <iostream>
#include <memory>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/gpu_kernels.hpp"
#include "pipetwin/models/systolic_array.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin::cli {
namespace {

struct KernelsOptions {
  GraphConfig config;
  std::string layer = ".*";
  bool json = false;
};

std::string describe(const GpuKernel& k) {
  if (!k.is_gemm) return fmt::format("{:.2f} MB", k.bytes / 1e6);
  const std::string batch = k.gemm.batch > 1 ? fmt::format(" x{:g}", k.gemm.batch) : "";
  return fmt::format("{:g}x{:g}x{:g}{}", k.gemm.m, k.gemm.n, k.gemm.k, batch);
}

std::vector<const Layer*> matching_layers(const Network& net, const std::string& layer_pattern) {
  std::regex pattern;
  try {
    pattern = std::regex(layer_pattern);
  } catch (const std::regex_error& error) {
    throw Error("kernels: --layer '" + layer_pattern + "' is not a regular expression (" + error.what() + ")");
  }
  std::vector<const Layer*> layers;
  for (const Layer& layer : net.layers) {
    if (std::regex_match(layer.name, pattern)) layers.push_back(&layer);  // the whole name: block1 is not block10
  }
  if (layers.empty()) {
    throw Error("kernels: no layer of " + net.name + " matches --layer '" + layer_pattern + "'");
  }
  return layers;
}

// A systolic array's GEMMs per layer task: shape, folds' compute cycles, DRAM cycles.
void print_systolic(const KernelsOptions& options, const Network& net, const HardwareProfile& hw, std::int64_t samples) {
  const SystolicSpec& spec = hw.processor.systolic;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!options.json) {
    std::cout << fmt::format("{} on {}: a {}x{} systolic array, {} dataflow, {} samples per microbatch (cycles at {:g} GHz)\n",
                             net.name, hw.name, spec.rows, spec.cols, to_string(spec.dataflow), samples, hw.clock_hz() / 1e9);
  }
  for (const Layer* layer : matching_layers(net, options.layer)) {
    for (const TaskKind kind : {TaskKind::F, TaskKind::BA, TaskKind::BW}) {
      if (layer->type != "conv2d" && layer->type != "dense") {
        if (!options.json && kind == TaskKind::F) std::cout << fmt::format("{}: {} (not modelled by the array)\n", layer->name, layer->type);
        continue;
      }
      nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
      std::int64_t compute = 0;
      double dram = 0;
      for (const ArrayGemm& g : layer_gemms(*layer, kind, samples)) {
        const std::int64_t cycles = gemm_compute_cycles(g, spec);
        const double dram_cycles = gemm_dram_cycles(g, spec);
        compute += cycles;
        dram += dram_cycles;
        gemms.push_back({{"m", g.m}, {"k", g.k}, {"n", g.n}, {"compute_cycles", cycles}, {"dram_cycles", dram_cycles}});
      }
      const std::int64_t total = systolic_layer_cycles(*layer, kind, samples, spec);
      if (options.json) {
        out.push_back({{"layer", layer->name}, {"kind", to_string(kind)}, {"gemms", gemms}, {"compute_cycles", compute},
                       {"dram_cycles", dram}, {"cycles", total}});
      } else {
        const auto& g = gemms.front();
        std::cout << fmt::format("{:<24} {:<3} {:>5} x GEMM {}x{}x{}  compute {:>12} cycles  DRAM {:>12.0f}  task {:>12}\n",
                                 layer->name, to_string(kind), gemms.size(), g["m"].get<std::int64_t>(),
                                 g["k"].get<std::int64_t>(), g["n"].get<std::int64_t>(), compute, dram, total);
      }
    }
  }
  if (options.json) std::cout << out.dump(2) << "\n";
}

void run(const KernelsOptions& options) {
  GraphConfig config = options.config;
  config.schedule = "sequential";
  config.processors = 1;
  const ScheduleRequest request = make_request(config);
  const HardwareProfile& hw = request.hardware;
  const Network& net = request.network;
  if (net.batch % request.microbatches != 0) {
    throw Error("kernels: --microbatches " + std::to_string(request.microbatches) + " does not divide the batch of " +
                std::to_string(net.batch));
  }
  const std::int64_t samples = net.batch / request.microbatches;
  if (hw.processor.accelerator.model == "systolic") {
    print_systolic(options, net, hw, samples);
    return;
  }
  if (hw.cost_model != CostModelKind::operator_level) {
    throw Error("kernels: hardware " + hw.name + " uses the " + to_string(hw.cost_model) +
                " cost model; choose a GPU profile (v100, a100, a100-40gb, h100, h100-pcie, h200) or pass cost_model=operator, "
                "or the systolic profile");
  }
  const auto layers = matching_layers(net, options.layer);
  const ProcessorSpec& p = hw.processor;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!options.json) {
    std::cout << fmt::format("{} on {} ({}), {} samples per microbatch, host {:g} us per framework operator and {:g} us per launch\n",
                             net.name, hw.name, hw.precision, samples, p.gpu.dispatch_s * 1e6, p.gpu.launch_s * 1e6);
  }
  for (const Layer* matched : layers) {
    const Layer& layer = *matched;
    // A transformer block's recomputation (recompute=blocks) runs the forward's kernels at a host
    // cost of its own.
    std::vector<TaskKind> kinds = {TaskKind::F};
    if (layer.type == "transformer_block") kinds.push_back(TaskKind::RC);
    kinds.insert(kinds.end(), {TaskKind::BA, TaskKind::BW});
    for (const TaskKind kind : kinds) {
      const auto kernels = layer_kernels(layer, kind, samples, layer.element_bytes);
      if (kernels.empty()) continue;
      const double cost_s = hw.seconds(layer_work_cycles(hw, layer, kind, samples));
      double gpu_s = 0;
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      if (!options.json) std::cout << fmt::format("{} {}:\n", layer.name, to_string(kind));
      const double e = static_cast<double>(layer.element_bytes);
      for (const auto& k : kernels) {
        const GemmTiming t = k.is_gemm ? gemm_timing(p.gpu, p, k.gemm, e, k.causal) : GemmTiming{};
        const double seconds = k.is_gemm ? t.seconds : gpu_kernel_seconds(p.gpu, p, k, e);
        gpu_s += seconds;
        nlohmann::ordered_json item{{"name", k.name}, {"seconds", seconds}};
        std::string tile;
        if (k.is_gemm) {
          item["gemm"] = {k.gemm.m, k.gemm.n, k.gemm.k, k.gemm.batch};
          item["tile"] = {t.tile_m, t.tile_n};
          item["split_k"] = t.split_k;
          item["waves"] = t.waves;
          item["tflops_per_s"] = 2 * k.gemm.m * k.gemm.n * k.gemm.k * k.gemm.batch * k.causal / seconds / 1e12;
          tile = fmt::format("tile {}x{}{}, {:g} waves, {:.0f} TFLOP/s", t.tile_m, t.tile_n,
                             t.split_k > 1 ? fmt::format(" split-k {}", t.split_k) : "", t.waves,
                             item["tflops_per_s"].get<double>());
        } else {
          item["bytes"] = k.bytes;
          tile = fmt::format("{:.0f} GB/s", k.bytes / seconds / 1e9);
        }
        list.push_back(item);
        if (!options.json) {
          std::cout << fmt::format("  {:<26} {:>22} {:>9.1f} us  {}\n", k.name, describe(k), seconds * 1e6, tile);
        }
      }
      const double host_s = layer_host_seconds(p.gpu, layer, kind, kernels.size());
      if (options.json) {
        out.push_back({{"layer", layer.name}, {"kind", to_string(kind)}, {"gpu_s", gpu_s}, {"host_s", host_s},
                       {"cost_s", cost_s}, {"kernels", list}});
      } else {
        std::cout << fmt::format("  {} kernels: GPU {:.1f} us, host {:.1f} us -> {:.1f} us\n", kernels.size(),
                                 gpu_s * 1e6, host_s * 1e6, cost_s * 1e6);
      }
    }
  }
  if (options.json) std::cout << out.dump(2) << "\n";
}

}  // namespace

void add_kernels_command(CLI::App& app) {
  auto options = std::make_shared<KernelsOptions>();
  auto* command = app.add_subcommand(
      "kernels", "list the GPU kernels the operator cost model times for each layer (GEMM tiles, waves, bytes, us), "
                 "or a systolic array's GEMMs and cycles (--hardware systolic)");
  options->config.model = "gpt";
  options->config.hardware = "a100";
  options->config.microbatches = 1;
  command->add_option("--model,-m", options->config.model, "network from `pipetwin models`, or a network file")
      ->capture_default_str();
  command->add_option("--hardware", options->config.hardware,
                      "GPU hardware profile from `pipetwin hardware`, or one with a systolic array (systolic)")
      ->capture_default_str();
  command->add_option("--microbatches", options->config.microbatches,
                      "microbatches per minibatch: the kernels are those of one microbatch (batch / microbatches samples)")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model or hardware (repeatable), e.g. batch=8, precision=fp16");
  command->add_option("--layer", options->layer,
                      "only layers whose whole name matches this regular expression (block1; block1[0-2]; block.*)")
      ->capture_default_str();
  command->add_flag("--json", options->json, "print JSON: one object per layer and task kind");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
