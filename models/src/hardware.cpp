// Hardware profiles and links: parsed from the embedded JSON files (or a user's file), with
// key=value overrides. Every loading error names the file, the JSON path and what was expected.
#include "pipetwin/models/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "pipetwin/models/embedded_file.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/json_read.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/models/systolic_array.hpp"

namespace pipetwin {
namespace {

bool is_json_path(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

std::string stem(const char* file_name) {
  std::string name = file_name;
  return name.substr(0, name.size() - 5);
}

const EmbeddedFile* find_embedded(const std::vector<EmbeddedFile>& files, const std::string& name) {
  for (const auto& file : files) {
    if (stem(file.name) == name) return &file;
  }
  return nullptr;
}

std::vector<std::string> names_of(const std::vector<EmbeddedFile>& files) {
  std::vector<std::string> names;
  for (const auto& file : files) names.push_back(stem(file.name));
  return names;
}

std::vector<ParamSpec> common_hardware_params() {
  return {{"precision", "", "precision whose peak FLOP/s applies (fp32, tf32, bf16...)"},
          {"efficiency", "", "fraction of peak FLOP/s reached by dense layers"},
          {"clock_hz", "", "processor clock; cycles are counted at this clock"},
          {"memory_bytes", "", "memory capacity per processor"},
          {"memory_bytes_per_s", "", "memory bandwidth per processor"},
          {"task_overhead_s", "", "fixed cost per task"},
          {"layer_overhead_s", "", "fixed cost per layer in a task"},
          {"link", "", "link between processors (see `pipetwin hardware`)"},
          {"host_link", "", "link to host memory"},
          {"host_memory_bytes", "", "host memory for offload (default 512 GiB)"},
          {"topology", "", "chain, ring, fully-connected or switch (inside a node)"},
          {"processors_per_node", "", "processors in one node (0: one node holds them all); between nodes, NICs"},
          {"nics_per_node", "", "NICs of a node, shared by its processors in turn (default: one per processor)"},
          {"nic", "", "link of each NIC between nodes (see `pipetwin hardware`)"},
          {"link_policy", "", "how the link between processors serves transfers: in-order or shared"},
          {"host_link_policy", "", "how the host link serves offloads and reloads: in-order or shared"},
          {"cost_model", "", "roofline, operator (GPU profiles: kernels timed from GEMM tiles and bytes) or systolic"},
          {"accelerator", "", "the simulator's processor model: fixed (the graph's costs), systolic, or a registered plug-in"},
          {"dataflow", "", "systolic array: os, ws or is (output-, weight- or input-stationary)"},
          {"array_rows", "", "systolic array: rows of MAC cells"},
          {"array_cols", "", "systolic array: columns of MAC cells"},
          {"gemm_efficiency", "", "operator model: fraction of the tensor peak a GEMM tile reaches"},
          {"l2_bytes_per_s", "", "operator model: L2 bandwidth feeding GEMM tiles"},
          {"memory_efficiency", "", "operator model: fraction of DRAM bandwidth memory-bound kernels reach"},
          {"fp32_flops_per_s", "", "operator model: FP32 peak for element-wise kernels"},
          {"kernel_s", "", "operator model: least time of one kernel"},
          {"dispatch_s", "", "operator model: host time of one framework operator"},
          {"launch_s", "", "operator model: host time of one CUDA kernel launch"}};
}

// The "accelerator" object: {"model": name, other keys: the model's settings}; the parameters
// accelerator, dataflow, array_rows and array_cols override it.
void read_accelerator(const JsonReader& root, const Params& params, HardwareProfile* hw) {
  AcceleratorSpec& a = hw->processor.accelerator;
  if (root.has("accelerator")) {
    const JsonReader section = root.at("accelerator");
    section.require_object();
    a.model = section.get_string("model");
    for (const auto& item : section.value().items()) {
      if (item.key() == "model") continue;
      a.settings[item.key()] = item.value().is_string() ? item.value().get<std::string>() : item.value().dump();
    }
  }
  a.model = params.get_string("accelerator", a.model);
  if (a.model.empty()) throw Error("hardware " + hw->name + ": accelerator needs a model name");
  for (auto [param, key] : {std::make_pair("dataflow", "dataflow"), std::make_pair("array_rows", "rows"),
                            std::make_pair("array_cols", "cols")}) {
    if (params.has(param)) a.settings[key] = params.get_string(param, "");
  }
  // The array's settings serve the systolic cost model and the systolic module, whichever model the
  // simulator is given (accelerator=fixed on a systolic profile runs the cost model's cycles).
  if (a.model == "systolic" || hw->cost_model == CostModelKind::systolic) {
    hw->processor.systolic = systolic_spec_from_settings(a.settings, hw->processor.clock_hz);
  } else {
    for (const char* key : {"dataflow", "array_rows", "array_cols"}) {
      if (params.has(key)) {
        throw Error("hardware " + hw->name + ": " + key + " is a setting of the systolic accelerator, which this profile "
                    "does not model (accelerator=systolic cost_model=systolic, or a profile with a systolic array)");
      }
    }
  }
}

void check_positive(double value, const std::string& what, const std::string& source) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw Error(source + ": " + what + " must be a positive number, got " + short_number(value));
  }
}

// The operator model's figures, as the profile's "gpu" object and the parameters name them.
const std::vector<std::string>& gpu_figure_names() {
  static const std::vector<std::string> names = {"gemm_efficiency", "l2_bytes_per_s", "memory_efficiency",
                                                 "fp32_flops_per_s", "kernel_s", "dispatch_s", "launch_s"};
  return names;
}

// The operator model's figures: from the profile's "gpu" object, each overridable by a parameter
// of the same name.
void read_gpu_spec(const JsonReader& gpu, const Params& params, GpuSpec* spec) {
  std::vector<std::string> keys = gpu_figure_names();
  keys.push_back("sources");
  gpu.check_keys(keys);
  enum class Range { fraction, positive, non_negative };
  const auto read = [&](const char* key, Range range) {
    const double value = params.get_double(key, gpu.get_double(key));
    const bool ok = std::isfinite(value) && (range == Range::non_negative ? value >= 0 : value > 0) &&
                    (range != Range::fraction || value <= 1);
    if (!ok) {
      const std::string expected = range == Range::fraction   ? "a number in (0, 1]"
                                   : range == Range::positive ? "a positive number"
                                                              : "a number >= 0";
      if (!params.has(key)) gpu.at(key).fail(expected);
      throw Error(std::string("hardware parameter ") + key + ": " + expected + " expected, got " + short_number(value));
    }
    return value;
  };
  spec->gemm_efficiency = read("gemm_efficiency", Range::fraction);
  spec->l2_bytes_per_s = read("l2_bytes_per_s", Range::positive);
  spec->memory_efficiency = read("memory_efficiency", Range::fraction);
  spec->fp32_flops_per_s = read("fp32_flops_per_s", Range::positive);
  spec->kernel_s = read("kernel_s", Range::non_negative);
  spec->dispatch_s = read("dispatch_s", Range::non_negative);
  spec->launch_s = read("launch_s", Range::non_negative);
}

// Nodes and NICs: the profile's "cluster" object, each figure overridable by a parameter.
void read_cluster(const JsonReader& root, const Params& params, HardwareProfile* hw) {
  ClusterSpec& cluster = hw->cluster;
  std::string nic;
  if (root.has("cluster")) {
    const JsonReader c = root.at("cluster");
    c.check_keys({"processors_per_node", "nics_per_node", "nic", "source"});
    cluster.processors_per_node = static_cast<std::int32_t>(c.get_int("processors_per_node"));
    cluster.nics_per_node = static_cast<std::int32_t>(c.get_int("nics_per_node", cluster.processors_per_node));
    nic = c.get_string("nic");
    cluster.source = c.get_string("source", "");
    if (cluster.processors_per_node < 1) c.at("processors_per_node").fail("a positive number of processors");
  }
  const std::int64_t per_node = params.get_int("processors_per_node", cluster.processors_per_node);
  if (per_node < 0 || per_node > 4096) {
    throw Error("hardware " + hw->name + ": processors_per_node must be 0 (one node) to 4096, got " + std::to_string(per_node));
  }
  if (per_node != cluster.processors_per_node) cluster.nics_per_node = static_cast<std::int32_t>(per_node);
  cluster.processors_per_node = static_cast<std::int32_t>(per_node);
  const std::int64_t nics = params.get_int("nics_per_node", cluster.nics_per_node);
  nic = params.get_string("nic", nic.empty() ? "ib-ndr" : nic);
  if (!cluster.clustered()) {
    if (params.has("nics_per_node") || params.has("nic")) {
      throw Error("hardware " + hw->name + ": nics_per_node and nic describe nodes; set processors_per_node too");
    }
    cluster.nics_per_node = 0;
    return;
  }
  if (nics < 1 || nics > per_node) {
    throw Error("hardware " + hw->name + ": nics_per_node must be 1 to processors_per_node (" + std::to_string(per_node) +
                "), got " + std::to_string(nics));
  }
  cluster.nics_per_node = static_cast<std::int32_t>(nics);
  cluster.nic = make_link(nic);
  if (hw->topology != "fully-connected" && hw->topology != "switch") {
    throw Error("hardware " + hw->name + ": nodes (processors_per_node) need a fully-connected or switch topology inside "
                "each node, not " + hw->topology);
  }
}

// Measured all-reduces: the profile's "all_reduce" object, {"source": ..., "seconds": {"<ranks>":
// [[bytes, seconds], ...]}}, sizes rising.
void read_all_reduce(const JsonReader& root, HardwareProfile* hw) {
  if (!root.has("all_reduce")) return;
  const JsonReader all_reduce = root.at("all_reduce");
  all_reduce.check_keys({"source", "seconds"});
  hw->all_reduce.source = all_reduce.get_string("source");
  if (hw->all_reduce.source.empty()) all_reduce.at("source").fail("where the measurement comes from");
  const JsonReader by_ranks = all_reduce.at("seconds");
  by_ranks.require_object();
  for (const auto& item : by_ranks.value().items()) {
    const JsonReader points = by_ranks.at(item.key());
    const std::string& key = item.key();
    const bool digits = !key.empty() && key.size() <= 4 && key[0] != '0' &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long ranks = digits ? std::strtol(key.c_str(), nullptr, 10) : 0;
    if (ranks < 2 || ranks > 4096) points.fail("a key that is a number of GPUs from 2 to 4096");
    if (points.array_size() < 2) points.fail("at least two [bytes, seconds] points");
    auto& measured = hw->all_reduce.seconds_by_bytes[static_cast<std::int32_t>(ranks)];
    for (std::size_t i = 0; i < points.array_size(); ++i) {
      const JsonReader point = points.at(i);
      if (point.array_size() != 2) point.fail("[bytes, seconds]");
      const double bytes = point.at(0).as_double(), seconds = point.at(1).as_double();
      if (!(bytes > 0) || !std::isfinite(bytes) || (!measured.empty() && bytes <= measured.back().first)) {
        point.at(0).fail("a positive size above the previous point's");
      }
      if (!(seconds > 0) || !std::isfinite(seconds)) point.at(1).fail("a positive number of seconds");
      measured.emplace_back(bytes, seconds);
    }
  }
  if (hw->all_reduce.seconds_by_bytes.empty()) by_ranks.fail("measurements for at least one number of GPUs");
}

}  // namespace

double MeasuredAllReduce::seconds(std::int32_t ranks, double bytes, double zero_bytes_s) const {
  const auto found = seconds_by_bytes.find(ranks);
  if (found == seconds_by_bytes.end()) throw Error("no measured all-reduce among " + std::to_string(ranks) + " GPUs");
  const auto& points = found->second;
  const auto line = [bytes](const std::pair<double, double>& a, const std::pair<double, double>& b) {
    return a.second + (b.second - a.second) * (bytes - a.first) / (b.first - a.first);
  };
  if (bytes <= points.front().first) return line({0.0, zero_bytes_s}, points.front());
  auto above = std::lower_bound(points.begin(), points.end(), bytes,
                                [](const std::pair<double, double>& p, double b) { return p.first < b; });
  if (above == points.end()) above = points.end() - 1;  // past the largest: its last segment's slope
  return line(*(above - 1), *above);
}

std::string to_string(CostModelKind kind) {
  switch (kind) {
    case CostModelKind::unit: return "unit";
    case CostModelKind::roofline: return "roofline";
    case CostModelKind::operator_level: return "operator";
    case CostModelKind::systolic: return "systolic";
  }
  return "?";
}

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = {"chain", "ring", "fully-connected", "switch"};
  return names;
}

LinkSpec link_from_json_text(const std::string& text, const std::string& source) {
  const nlohmann::json document = JsonReader::parse(text, source);
  const JsonReader root(document, source);
  root.check_keys({"name", "description", "bytes_per_s", "latency_s", "shared", "policy", "source"});
  LinkSpec link;
  link.name = root.get_string("name");
  link.description = root.get_string("description", "");
  link.bytes_per_s = root.get_double("bytes_per_s");
  link.latency_s = root.get_double("latency_s", 0);
  link.shared = root.get_bool("shared", false);
  try {
    link.policy = link_policy_from_string(root.get_string("policy", "in-order"));
  } catch (const Error& error) {
    throw Error(source + ": /policy: " + error.what());
  }
  if (!(link.bytes_per_s > 0) || !std::isfinite(link.bytes_per_s)) root.at("bytes_per_s").fail("a positive number");
  if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s)) root.at("latency_s").fail("a number >= 0");
  return link;
}

std::vector<std::string> link_names() { return names_of(embedded_link_files()); }

LinkSpec make_link(const std::string& name) {
  if (is_json_path(name)) return link_from_json_text(JsonReader::read_text_file(name), name);
  const auto files = embedded_link_files();
  const EmbeddedFile* file = find_embedded(files, name);
  if (file == nullptr) throw Error(unknown_name_message("link", name, names_of(files)));
  return link_from_json_text(file->text, std::string("built-in link ") + file->name);
}

HardwareProfile hardware_from_json_text(const std::string& text, const std::string& source,
                                        const Params& params) {
  const nlohmann::json document = JsonReader::parse(text, source);
  const JsonReader root(document, source);
  root.check_keys({"name", "description", "cost_model", "accelerator", "processor", "link", "host_link",
                   "host_memory_bytes", "topology", "cluster", "all_reduce", "validated"});
  HardwareProfile hw;
  hw.name = root.get_string("name");
  hw.description = root.get_string("description", "");
  hw.source = source;
  const std::string cost_model = params.get_string("cost_model", root.get_string("cost_model", "roofline"));
  if (cost_model == "unit") {
    hw.cost_model = CostModelKind::unit;
  } else if (cost_model == "roofline") {
    hw.cost_model = CostModelKind::roofline;
  } else if (cost_model == "operator") {
    hw.cost_model = CostModelKind::operator_level;
  } else if (cost_model == "systolic") {
    hw.cost_model = CostModelKind::systolic;
  } else if (params.has("cost_model")) {
    throw Error("hardware parameter cost_model: unit, roofline, operator or systolic expected, got '" + cost_model + "'");
  } else {
    root.at("cost_model").fail("\"unit\", \"roofline\", \"operator\" or \"systolic\"");
  }
  hw.validated = root.get_bool("validated", false);

  const JsonReader proc = root.at("processor");
  proc.check_keys({"clock_hz", "peak_flops_per_s", "precision", "efficiency", "memory_bytes",
                   "memory_bytes_per_s", "task_overhead_s", "layer_overhead_s", "sm_count",
                   "partitionable", "default_sms", "gpu"});
  const bool partitionable = proc.get_bool("partitionable", false);
  std::vector<ParamSpec> accepted = common_hardware_params();
  if (partitionable) accepted.push_back({"sms", "", "SMs in each partition"});
  params.check_known(accepted, "hardware " + hw.name);

  ProcessorSpec& p = hw.processor;
  p.clock_hz = params.get_double("clock_hz", proc.get_double("clock_hz"));
  check_positive(p.clock_hz, "clock_hz", source);
  hw.precision = params.get_string("precision", proc.get_string("precision"));
  const JsonReader peaks = proc.at("peak_flops_per_s");
  peaks.require_object();
  if (!peaks.has(hw.precision)) {
    std::vector<std::string> known;
    for (const auto& item : peaks.value().items()) known.push_back(item.key());
    throw Error("hardware " + hw.name + ": " + unknown_name_message("precision", hw.precision, known));
  }
  p.peak_flops_per_s = peaks.get_double(hw.precision);
  p.efficiency = params.get_double("efficiency", proc.get_double("efficiency", 1.0));
  if (!(p.efficiency > 0 && p.efficiency <= 1)) {
    throw Error("hardware " + hw.name + ": efficiency must be in (0, 1], got " +
                std::to_string(p.efficiency));
  }
  p.memory_bytes = params.get_int("memory_bytes", proc.get_int("memory_bytes"));
  p.memory_bytes_per_s = params.get_double("memory_bytes_per_s", proc.get_double("memory_bytes_per_s"));
  p.task_overhead_s = params.get_double("task_overhead_s", proc.get_double("task_overhead_s", 0));
  p.layer_overhead_s = params.get_double("layer_overhead_s", proc.get_double("layer_overhead_s", 0));
  p.sm_count = proc.get_int("sm_count", 0);
  check_positive(p.peak_flops_per_s, "peak_flops_per_s", source);
  check_positive(static_cast<double>(p.memory_bytes), "memory_bytes", source);
  check_positive(p.memory_bytes_per_s, "memory_bytes_per_s", source);
  for (const double overhead : {p.task_overhead_s, p.layer_overhead_s}) {
    if (!(overhead >= 0) || !std::isfinite(overhead)) {  // NaN is not >= 0
      throw Error("hardware " + hw.name + ": task_overhead_s and layer_overhead_s must be numbers >= 0, got " +
                  short_number(overhead));
    }
  }
  if (proc.has("gpu")) {
    read_gpu_spec(proc.at("gpu"), params, &p.gpu);
  } else {
    for (const auto& key : gpu_figure_names()) {
      if (params.has(key)) {
        throw Error("hardware " + hw.name + ": " + key + " is a figure of the operator model, which this profile "
                    "has no GPU figures for");
      }
    }
  }
  if (hw.cost_model == CostModelKind::operator_level) {
    if (!proc.has("gpu")) {
      std::string names;
      for (const auto& key : gpu_figure_names()) names += (names.empty() ? "" : ", ") + key;
      throw Error(source + ": /processor/gpu: the operator cost model needs the GPU's figures (" + names + ")");
    }
    if (p.sm_count <= 0) proc.at("sm_count").fail("a positive SM count (the operator model tiles GEMMs over the SMs)");
  }
  if (partitionable) {
    // An SM partition of one GPU: compute scales with its SMs; memory is one shared system.
    const std::int64_t whole = p.sm_count;
    const std::int64_t sms = params.get_int("sms", proc.get_int("default_sms", whole));
    if (sms < 1 || sms > whole) {
      throw Error("hardware " + hw.name + ": sms must be in 1.." + std::to_string(whole) +
                  ", got " + std::to_string(sms));
    }
    p.peak_flops_per_s *= static_cast<double>(sms) / static_cast<double>(whole);
    p.gpu.fp32_flops_per_s *= static_cast<double>(sms) / static_cast<double>(whole);
    p.gpu.l2_bytes_per_s *= static_cast<double>(sms) / static_cast<double>(whole);
    p.sm_count = sms;
    p.shared_memory_system = true;
    hw.name += ":sms=" + std::to_string(sms);
  }

  read_accelerator(root, params, &hw);

  hw.link = make_link(params.get_string("link", root.get_string("link")));
  hw.host_link = make_link(params.get_string("host_link", root.get_string("host_link")));
  for (auto [key, spec] : {std::make_pair("link_policy", &hw.link), std::make_pair("host_link_policy", &hw.host_link)}) {
    if (!params.has(key)) continue;
    try {
      spec->policy = link_policy_from_string(params.get_string(key, ""));
    } catch (const Error& error) {
      throw Error("hardware " + hw.name + ": " + key + ": " + error.what());
    }
  }
  hw.host_memory_bytes = params.get_int("host_memory_bytes", root.get_int("host_memory_bytes", 549755813888));
  check_positive(static_cast<double>(hw.host_memory_bytes), "host_memory_bytes", source);
  hw.topology = params.get_string("topology", root.get_string("topology", "fully-connected"));
  const auto& topologies = topology_names();
  if (std::find(topologies.begin(), topologies.end(), hw.topology) == topologies.end()) {
    throw Error("hardware " + hw.name + ": " + unknown_name_message("topology", hw.topology, topologies));
  }
  read_cluster(root, params, &hw);
  // Measured on the profile's own fabric: another link or topology makes it someone else's.
  if (!params.has("link") && !params.has("topology")) read_all_reduce(root, &hw);
  return hw;
}

std::vector<HardwareEntry> hardware_entries() {
  std::vector<HardwareEntry> entries;
  for (const auto& file : embedded_hardware_files()) {
    const HardwareProfile hw = hardware_from_json_text(file.text, file.name, Params());
    std::vector<ParamSpec> params = hardware_params(stem(file.name));
    entries.push_back({stem(file.name), hw.description, params});
  }
  return entries;
}

std::vector<ParamSpec> hardware_params(const std::string& name) {
  std::vector<ParamSpec> params = common_hardware_params();
  std::string text;
  if (is_json_path(name)) {
    text = JsonReader::read_text_file(name);
  } else {
    const auto files = embedded_hardware_files();
    const EmbeddedFile* file = find_embedded(files, name);
    if (file == nullptr) {
      throw Error(unknown_name_message("hardware", name, names_of(files)) +
                  "; or give a profile file ending in .json");
    }
    text = file->text;
  }
  const nlohmann::json document = JsonReader::parse(text, name);
  const JsonReader root(document, name);
  if (root.has("processor") && root.at("processor").get_bool("partitionable", false)) {
    params.push_back({"sms", std::to_string(root.at("processor").get_int("default_sms", 0)), "SMs in each partition"});
  }
  return params;
}

HardwareProfile make_hardware(const std::string& name, const Params& params) {
  if (is_json_path(name)) return hardware_from_json_text(JsonReader::read_text_file(name), name, params);
  const auto files = embedded_hardware_files();
  const EmbeddedFile* file = find_embedded(files, name);
  if (file == nullptr) {
    throw Error(unknown_name_message("hardware", name, names_of(files)) +
                "; or give a profile file ending in .json");
  }
  HardwareProfile hw = hardware_from_json_text(file->text, std::string("built-in ") + file->name, params);
  hw.source = "built-in";
  return hw;
}

}  // namespace pipetwin
