// `pipetwin kernels`: the GPU kernels the operator-level cost model times for each layer of a
// network, with the cuBLAS tile, split-K and waves of each GEMM, so a prediction can be read
// kernel by kernel (and checked against a profiler's trace).
#include <iostream>
#include <memory>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/gpu_kernels.hpp"
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

void run(const KernelsOptions& options) {
  GraphConfig config = options.config;
  config.schedule = "sequential";
  config.processors = 1;
  const ScheduleRequest request = make_request(config);
  const HardwareProfile& hw = request.hardware;
  if (hw.cost_model != CostModelKind::operator_level) {
    throw Error("kernels: hardware " + hw.name + " uses the " + to_string(hw.cost_model) +
                " cost model; choose a GPU profile (v100, a100, a100-40gb, h100, h100-pcie, h200) or pass cost_model=operator");
  }
  const Network& net = request.network;
  if (net.batch % request.microbatches != 0) {
    throw Error("kernels: --microbatches " + std::to_string(request.microbatches) + " does not divide the batch of " +
                std::to_string(net.batch));
  }
  const std::int64_t samples = net.batch / request.microbatches;
  std::regex pattern;
  try {
    pattern = std::regex(options.layer);
  } catch (const std::regex_error& error) {
    throw Error("kernels: --layer '" + options.layer + "' is not a regular expression (" + error.what() + ")");
  }
  std::vector<const Layer*> layers;
  for (const Layer& layer : net.layers) {
    if (std::regex_search(layer.name, pattern)) layers.push_back(&layer);
  }
  if (layers.empty()) {
    throw Error("kernels: no layer of " + net.name + " matches --layer '" + options.layer + "'");
  }
  const ProcessorSpec& p = hw.processor;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!options.json) {
    std::cout << fmt::format("{} on {} ({}), {} samples per microbatch, host {:g} us per framework operator and {:g} us per launch\n",
                             net.name, hw.name, hw.precision, samples, p.gpu.dispatch_s * 1e6, p.gpu.launch_s * 1e6);
  }
  for (const Layer* matched : layers) {
    const Layer& layer = *matched;
    for (const TaskKind kind : {TaskKind::F, TaskKind::BA, TaskKind::BW}) {
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
      "kernels", "list the GPU kernels the operator cost model times for each layer (GEMM tiles, waves, bytes, us)");
  options->config.model = "gpt";
  options->config.hardware = "a100";
  options->config.microbatches = 1;
  command->add_option("--model,-m", options->config.model, "network from `pipetwin models`, or a network file")
      ->capture_default_str();
  command->add_option("--hardware", options->config.hardware, "GPU hardware profile from `pipetwin hardware`")
      ->capture_default_str();
  command->add_option("--microbatches", options->config.microbatches,
                      "microbatches per minibatch: the kernels are those of one microbatch (batch / microbatches samples)")
      ->capture_default_str();
  command->add_option("--param", options->config.params, "key=value for the model or hardware (repeatable), e.g. batch=8, precision=fp16");
  command->add_option("--layer", options->layer, "only layers whose name matches this regular expression")
      ->capture_default_str();
  command->add_flag("--json", options->json, "print JSON: one object per layer and task kind");
  command->callback([options] { run(*options); });
}

}  // namespace pipetwin::cli
