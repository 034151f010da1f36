// `pipetwin models`, `pipetwin schedules`, `pipetwin hardware`: what is registered, with the
// parameters each takes (text, or --json).
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "pipetwin/models/systolic_array.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "table.hpp"

namespace pipetwin::cli {
namespace {

void print_params(const std::vector<ParamSpec>& params) {
  for (const auto& p : params) {
    std::cout << fmt::format("      {}={}  {}\n", p.name, p.default_value.empty() ? "..." : p.default_value, p.description);
  }
}

nlohmann::ordered_json params_json(const std::vector<ParamSpec>& params) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& p : params) {
    list.push_back({{"name", p.name}, {"default", p.default_value}, {"description", p.description}});
  }
  return list;
}

// The group sizes a profile has measured all-reduces for (docs/cost-model.md).
std::vector<std::int32_t> measured_all_reduce_gpus(const HardwareProfile& hw) {
  std::vector<std::int32_t> gpus;
  for (const auto& [ranks, points] : hw.all_reduce.seconds_by_bytes) gpus.push_back(ranks);
  return gpus;
}

void list_models(bool json) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!json) std::cout << "Networks (--model NAME, or a network file ending in .json):\n";
  for (const auto& entry : network_entries()) {
    const Network net = make_network(entry.name, Params());
    if (json) {
      out.push_back({{"name", entry.name}, {"description", entry.description},
                     {"layers", net.size()}, {"parameters", net.parameters()},
                     {"forward_macs_per_sample", net.forward_macs_per_sample()},
                     {"params", params_json(entry.params)}});
      continue;
    }
    std::cout << fmt::format("  {:<10} {}\n", entry.name, entry.description);
    std::cout << fmt::format("      {} layers, {:.2f} M parameters, {:.2f} M forward MACs per sample\n",
                             net.size(), static_cast<double>(net.parameters()) / 1e6,
                             net.forward_macs_per_sample() / 1e6);
    print_params(entry.params);
  }
  if (json) std::cout << out.dump(2) << "\n";
}

void list_schedules(bool json) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!json) std::cout << "Schedules (--schedule NAME):\n";
  for (const auto& entry : schedule_entries()) {
    if (json) {
      out.push_back({{"name", entry.name}, {"description", entry.description},
                     {"weights", to_string(entry.semantics)}, {"params", params_json(entry.params)}});
      continue;
    }
    std::cout << fmt::format("  {:<11} {} [weights: {}]\n", entry.name, entry.description,
                             to_string(entry.semantics));
    print_params(entry.params);
  }
  if (json) std::cout << out.dump(2) << "\n";
}

void list_hardware(bool json) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!json) std::cout << "Hardware profiles (--hardware NAME, or a profile file ending in .json):\n";
  const std::size_t common_count = hardware_params("unit").size();
  for (const auto& entry : hardware_entries()) {
    const HardwareProfile hw = make_hardware(entry.name, Params());
    const auto& p = hw.processor;
    if (json) {
      out.push_back({{"name", entry.name}, {"description", entry.description},
                     {"cost_model", to_string(hw.cost_model)},
                     {"accelerator", p.accelerator.model},
                     {"clock_hz", p.clock_hz}, {"precision", hw.precision},
                     {"peak_flops_per_s", p.peak_flops_per_s}, {"efficiency", p.efficiency},
                     {"memory_bytes", p.memory_bytes}, {"memory_bytes_per_s", p.memory_bytes_per_s},
                     {"link", hw.link.name}, {"host_link", hw.host_link.name},
                     {"topology", hw.topology},
                     {"processors_per_node", hw.cluster.processors_per_node},
                     {"nics_per_node", hw.cluster.nics_per_node},
                     {"nic", hw.cluster.clustered() ? hw.cluster.nic.name : ""},
                     {"measured_all_reduce_gpus", measured_all_reduce_gpus(hw)},
                     {"validated", hw.validated},
                     {"params", params_json(entry.params)}});
      continue;
    }
    std::cout << fmt::format("  {:<9} {}\n", entry.name, entry.description);
    if (hw.cost_model == CostModelKind::roofline) {
      std::cout << fmt::format(
          "      {:.3g} TFLOP/s {} x {:.2f} efficiency, {} at {:g} GB/s, {:.3g} GHz, link {}, "
          "host {}, {}{}\n",
          p.peak_flops_per_s / 1e12, hw.precision, p.efficiency, human_bytes(p.memory_bytes),
          p.memory_bytes_per_s / 1e9, p.clock_hz / 1e9, hw.link.name, hw.host_link.name,
          hw.topology, hw.validated ? ", validated" : ", not yet validated against measurement");
    } else if (hw.cost_model == CostModelKind::operator_level) {
      std::cout << fmt::format(
          "      operator model: {:.3g} TFLOP/s {} (GEMM tiles at {:.2f}), {} SMs, {} at {:g} GB/s, host "
          "{:g} us per framework operator + {:g} us per launch, link {}, host {}, {}{}\n",
          p.peak_flops_per_s / 1e12, hw.precision, p.gpu.gemm_efficiency, p.sm_count, human_bytes(p.memory_bytes),
          p.memory_bytes_per_s / 1e9, p.gpu.dispatch_s * 1e6, p.gpu.launch_s * 1e6, hw.link.name, hw.host_link.name,
          hw.topology,
          hw.validated ? ", validated" : ", not yet validated against measurement");
    }
    if (hw.cost_model == CostModelKind::systolic) {
      const SystolicSpec& a = p.systolic;
      std::cout << fmt::format(
          "      systolic array {}x{} ({} dataflow), {:g} GHz, SRAMs {} / {} / {}, DRAM {:g} GB/s, {}, link {}, host {}, {}{}\n",
          a.rows, a.cols, to_string(a.dataflow), p.clock_hz / 1e9, human_bytes(a.ifmap_sram_bytes),
          human_bytes(a.filter_sram_bytes), human_bytes(a.ofmap_sram_bytes), a.dram_bytes_per_cycle * p.clock_hz / 1e9,
          human_bytes(p.memory_bytes), hw.link.name, hw.host_link.name, hw.topology,
          hw.validated ? ", validated" : ", not yet validated against measurement");
    }
    if (p.accelerator.model != "fixed") {
      std::cout << fmt::format("      simulator accelerator model: {}\n", p.accelerator.model);
    }
    if (hw.cluster.clustered()) {
      std::cout << fmt::format("      nodes of {} processors, {} NIC(s) of {} each between nodes\n",
                               hw.cluster.processors_per_node, hw.cluster.nics_per_node, hw.cluster.nic.name);
    }
    if (!hw.all_reduce.seconds_by_bytes.empty()) {
      std::cout << fmt::format("      tensor-parallel all-reduces as measured among {} GPUs\n",
                               fmt::join(measured_all_reduce_gpus(hw), ", "));
    }
    // Parameters beyond the ones every profile takes (listed once below).
    print_params(std::vector<ParamSpec>(entry.params.begin() + static_cast<long>(common_count),
                                        entry.params.end()));
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "Parameters every profile takes (default: the profile's value):\n";
  print_params(hardware_params("unit"));
  std::cout << "Links (link=NAME, host_link=NAME):\n";
  for (const auto& name : link_names()) {
    const LinkSpec link = make_link(name);
    std::cout << fmt::format("  {:<9} {:g} GB/s, {:g} us, {}{}: {}\n", name, link.bytes_per_s / 1e9,
                             link.latency_s * 1e6, to_string(link.policy), link.shared ? ", one shared medium" : "",
                             link.description);
  }
}

void add_list(CLI::App& app, const char* name, const char* help, void (*list)(bool)) {
  auto* command = app.add_subcommand(name, help);
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "print JSON instead of text");
  command->callback([json, list] { list(*json); });
}

}  // namespace

void add_list_commands(CLI::App& app) {
  add_list(app, "models", "list the built-in networks and their parameters", list_models);
  add_list(app, "schedules", "list the registered schedules and their parameters", list_schedules);
  add_list(app, "hardware", "list the hardware profiles and links", list_hardware);
}

}  // namespace pipetwin::cli
