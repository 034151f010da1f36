// The schedule registry and make_graph(): names plus key=value parameters to a task graph.
#include "pipetwin/schedule/registry.hpp"

#include <algorithm>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/data_parallel.hpp"
#include "pipetwin/schedule/generators.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "pipetwin/schedule/gradient_assembly.hpp"
#include "pipetwin/schedule/warm_to_linear.hpp"
#include "pipetwin/schedule/wait_loss.hpp"
#include "pipetwin/schedule/weight_reuse.hpp"

namespace pipetwin {
namespace {

const ParamSpec kCutsParam{"cuts", "",
                           "cut after these layer indices (comma-separated, from 0), one stage per "
                           "processor; default: the partition minimising the slowest stage"};

const ParamSpec kInFlightParam{"max_in_flight", "",
                               "most microbatches whose activations a stage holds at once (every "
                               "stage); default S-s (zb-h1) or 2(S-s)-1 (zb-h2) on stage s"};

const ParamSpec kOffloadParam{"offload", "false",
                              "offload each microbatch's activations to host memory after its "
                              "forward and reload them before its backward"};

const ParamSpec kP2pParam{"p2p", "async",
                          "stage-to-stage transfers: async (start when the data is ready, overlap the sender's next "
                          "task) or rendezvous (blocking send and receive, as DeepSpeed's pipeline engine: a transfer "
                          "waits for its receiver to reach it, the sender waits for the transfer)"};
const ParamSpec kRecomputeParam{"recompute", "none",
                                "activation recomputation: none; full (a forward keeps only its stage's "
                                "input; the forward runs again right before the backward); selective "
                                "(only transformer blocks' attention cores are dropped and made again); or "
                                "blocks (Megatron-LM's: each transformer block keeps its input and runs again)"};

// A synchronous stage schedule's own parameters, and data parallelism's.
std::vector<ParamSpec> with_data_parallel(std::vector<ParamSpec> specs) {
  for (auto& spec : parallel_params()) specs.push_back(std::move(spec));
  return specs;
}

bool declares(const std::vector<ParamSpec>& specs, const std::string& key) {
  return std::any_of(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == key; });
}

}  // namespace

const std::vector<ScheduleEntry>& schedule_entries() {
  static const std::vector<ScheduleEntry> entries = {
      {"sequential", "plain SGD: layers split over P processors, one microbatch in flight",
       WeightSemantics::synchronous, with_data_parallel({kRecomputeParam, kCutsParam, kP2pParam}), generate_sequential},
      {"gpipe", "all forwards, all backwards, flush, one update per minibatch (Huang et al. 2019)",
       WeightSemantics::synchronous, with_data_parallel({kRecomputeParam, kCutsParam, kOffloadParam, kP2pParam}), generate_gpipe},
      {"1f1b", "PipeDream-Flush / DAPPLE: warm-up, one-forward-one-backward, cool-down, flush",
       WeightSemantics::synchronous, with_data_parallel({kRecomputeParam, kCutsParam, kOffloadParam, kP2pParam}), generate_1f1b},
      {"pipedream", "asynchronous 1F1B without flush, update per microbatch, weight stashing "
                    "(Narayanan et al. 2019)",
       WeightSemantics::stashed, {kRecomputeParam, kCutsParam, kOffloadParam, kP2pParam}, generate_pipedream},
      {"zb-h1", "zero bubble (Qi et al. 2024): backward split into BA and BW, BW fills bubbles; "
                "1f1b's memory, a third of its bubble",
       WeightSemantics::synchronous, with_data_parallel({kRecomputeParam, kCutsParam, kInFlightParam, kP2pParam}), generate_zb_h1},
      {"zb-h2", "zero bubble with about twice 1f1b's activation memory: almost no bubble",
       WeightSemantics::synchronous, with_data_parallel({kRecomputeParam, kCutsParam, kInFlightParam, kP2pParam}), generate_zb_h2},
      {"pipedream-2bw", "PipeDream-2BW: 1F1B without flush, one update per minibatch, forwards use "
                        "the previous version (two weight versions per stage; M >= P)",
       WeightSemantics::double_buffered, {kRecomputeParam, kCutsParam, kP2pParam}, generate_pipedream_2bw},
      {"stale-weights", "Zhang & Abdelrahman: registers after the PPV layers, forward and backward as "
                        "separate stages, update after every backward, no stashing (stale weights)",
       WeightSemantics::stale,
       {{"ppv", "", "layers (from 1) followed by a pipeline register, one fewer than processors; "
                    "default: the balanced partition"},
        {"hybrid", "1", "fraction of the minibatches trained pipelined; the rest nonpipelined"},
        {"stash", "false", "true: the same pipeline with PipeDream's weight stashing (backwards read their "
                           "forward's version), for the paper's memory comparison"}},
       generate_stale_weights},
      {"layerwise-merge", "Akintoye et al. (reconstructed): merge layer partitions to cut communication "
                          "within a tolerance of the balanced partition; asynchronous 1F1B",
       WeightSemantics::stashed,
       {{"tolerance", "0.05", "how much slower than the balanced partition's the slowest stage may be"},
        kCutsParam},
       generate_layerwise_merge},
      {"layerpipe", "LayerPipe (reconstructed): per-layer F, split BA, BW, U placed on P processors by a "
                    "modulo scheduler; layer l's forward lags 2 S(l) updates",
       WeightSemantics::delayed,
       {{"stages", "", "pipeline stages for the delay rule (default: P, at most the network's cut points + 1)"},
        {"ba_parts", "2", "parts the activation gradient of a layer is split into"},
        {"scheduler", "greedy", "greedy (the modulo heuristic) or exact (an integer program solved by CBC: "
                                "least period, then fewest bytes, then least stash memory)"},
        {"solve_seconds", "10", "exact scheduler: wall-clock limit of the solves; the best schedule found is used"},
        {"solve_nodes", "0", "exact scheduler: branch-and-bound nodes per solve, 0 for no limit (a node limit, "
                             "unlike a time limit, gives the same schedule on every machine)"},
        {"period", "", "exact scheduler: schedule at this period in cycles (default: the least)"},
        kCutsParam},
       generate_layerpipe},
      {"pipefb", "PipeFB (reconstructed): each stage's forwards and backwards on two processors, "
                 "activations F -> B through host memory, weights back B -> F; P = 2 x stages",
       WeightSemantics::delayed,
       {{"lag", "2", "extra updates a stage's forwards lag beyond the 2(S-1-s) in flight round the loop"},
        {"fnodes", "", "processors that run forwards (default P/2, one per stage); the other P - fnodes are "
                       "B-nodes, one per stage, and each F-node runs the forwards of consecutive stages"},
        kCutsParam},
       generate_pipefb},
      {"interleaved-1f1b", "Megatron-LM's interleaved 1F1B: chunks model chunks per processor, "
                           "bubble shrinks chunks-fold (M a multiple of P)",
       WeightSemantics::synchronous,
       with_data_parallel({{"chunks", "2", "model chunks (virtual stages) per processor"}, kRecomputeParam, kCutsParam, kP2pParam}),
       generate_interleaved_1f1b},
      {"torch-csv", "a schedule from torch.distributed.pipelining's compute-only CSV (file=...): "
                    "one row per rank, actions such as 0F1, 1I0, 1W0, 2B3",
       WeightSemantics::synchronous,
       {{"file", "", "the CSV file (required)"}, kCutsParam},
       generate_torch_csv, false},
  };
  return entries;
}

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const auto& entry : schedule_entries()) names.push_back(entry.name);
  return names;
}

std::vector<std::string> standalone_schedule_names() {
  std::vector<std::string> names;
  for (const auto& entry : schedule_entries()) {
    if (entry.standalone) names.push_back(entry.name);
  }
  return names;
}

const ScheduleEntry& find_schedule(const std::string& name) {
  for (const auto& entry : schedule_entries()) {
    if (entry.name == name) return entry;
  }
  throw Error(unknown_name_message("schedule", name, schedule_names()));
}

GraphConfig without_other_schedules_params(GraphConfig config) {
  const auto& mine = find_schedule(config.schedule).params;
  const auto model_specs = network_params(config.model);
  const auto hardware_specs = hardware_params(config.hardware);
  std::vector<std::string> kept;
  for (const auto& item : config.params) {
    std::string key = item.substr(0, item.find('='));
    if (key.rfind("schedule.", 0) == 0) key = key.substr(9);
    const bool someone_else = std::any_of(schedule_entries().begin(), schedule_entries().end(),
                                          [&](const ScheduleEntry& e) { return declares(e.params, key); });
    if (someone_else && !declares(mine, key) && !declares(model_specs, key) && !declares(hardware_specs, key)) {
      continue;
    }
    kept.push_back(item);
  }
  config.params = std::move(kept);
  return config;
}

GraphConfig single_replica(GraphConfig config) {
  std::vector<std::string> kept;
  for (const auto& item : config.params) {
    std::string key = item.substr(0, item.find('='));
    if (key.rfind("schedule.", 0) == 0) key = key.substr(9);
    if (!declares(parallel_params(), key)) kept.push_back(item);
  }
  config.params = std::move(kept);
  return config;
}

namespace {

// A graph's recorded schedule parameter `key` as a count of at least 1 (1 when absent); a graph
// file may say anything, so a bad one is a clear error.
int recorded_count(const TaskGraph& graph, const std::string& key) {
  const auto it = graph.parameters.find(key);
  if (it == graph.parameters.end()) return 1;
  Params params;
  params.set(key, it->second);
  const std::int64_t value = params.get_int(key, 1);
  if (value < 1 || value > 4096) throw Error("graph parameter " + key + " must be 1 to 4096, got " + it->second);
  return static_cast<int>(value);
}

// A graph's recorded schedule flag `key` (0 or 1; 0 when absent), checked as recorded_count checks.
bool recorded_flag(const TaskGraph& graph, const std::string& key) {
  const auto it = graph.parameters.find(key);
  if (it == graph.parameters.end()) return false;
  Params params;
  params.set(key, it->second);
  const std::int64_t value = params.get_int(key, 0);
  if (value != 0 && value != 1) throw Error("graph parameter " + key + " must be 0 or 1, got " + it->second);
  return value == 1;
}

}  // namespace

int graph_replicas(const TaskGraph& graph) { return recorded_count(graph, "schedule.dp"); }

int graph_tensor_parallel(const TaskGraph& graph) { return recorded_count(graph, "schedule.tp"); }

int graph_gpus(const TaskGraph& graph) { return graph.processor_count() * graph_tensor_parallel(graph); }

Network graph_network(const TaskGraph& graph) {
  Params params;
  for (const auto& [key, value] : graph.parameters) {
    if (key.rfind("model.", 0) == 0) params.set(key.substr(6), value);
  }
  const Network network = make_network(graph.model, params);
  const int ranks = graph_tensor_parallel(graph);
  return ranks > 1 ? tensor_parallel_network(network, ranks, recorded_flag(graph, "schedule.sp")) : network;
}

GraphConfig graph_config(const std::string& model, const std::string& schedule, const std::string& hardware,
                         int processors, int microbatches, int minibatches) {
  GraphConfig config;
  config.model = model;
  config.schedule = schedule;
  config.hardware = hardware;
  config.processors = processors;
  config.microbatches = microbatches;
  config.minibatches = minibatches;
  return config;
}

void attach_calibration(HardwareProfile& hardware, const Calibration& calibration, const Network& network) {
  if (hardware.cost_model == CostModelKind::unit) throw Error("hardware " + hardware.name + " uses the unit cost model; a calibration table needs a roofline profile");
  check_calibration_covers(calibration, network);
  if (calibration.copy_bytes_per_s > 0) {
    hardware.link.bytes_per_s = calibration.copy_bytes_per_s;
    // Offload and reload stay in the processor's own process, across ranks too.
    hardware.host_link.bytes_per_s =
        calibration.core_copy_bytes_per_s > 0 ? calibration.core_copy_bytes_per_s : calibration.copy_bytes_per_s;
  }
  if (calibration.copy_latency_s >= 0) {
    hardware.link.latency_s = calibration.copy_latency_s;
    hardware.host_link.latency_s = calibration.copy_latency_s;
    // A link thread's transfer: its thread's wake-up, the copy's round trip, the reader's wake-up.
    // Where the table timed the handoff apart, the first is paid only when the link waited, and
    // the last holds the link no longer (docs/design.md, "Links").
    if (calibration.handoff_s >= 0 && 2 * calibration.handoff_s <= calibration.copy_latency_s) {
      hardware.link.wake_s = calibration.handoff_s;
      hardware.link.delivery_s = calibration.handoff_s;
    }
  }
  hardware.description += " (calibrated by " + calibration.source + ")";
  hardware.calibration = std::make_shared<const Calibration>(calibration);
}

ScheduleRequest make_request(const GraphConfig& config) {
  const ScheduleEntry& entry = find_schedule(config.schedule);
  const std::vector<ParamSpec> model_specs = network_params(config.model);
  const std::vector<ParamSpec> hardware_specs = hardware_params(config.hardware);
  if (config.processors < 1) throw Error("processors must be at least 1, got " + std::to_string(config.processors));
  if (config.microbatches < 1) throw Error("microbatches must be at least 1, got " + std::to_string(config.microbatches));
  if (config.minibatches < 1) throw Error("minibatches must be at least 1, got " + std::to_string(config.minibatches));
  // Every task is held in memory (a few hundred bytes each, with its dependencies and buffers):
  // a bound on the stream keeps a run within memory and seconds, far beyond any schedule studied.
  constexpr std::int64_t kMaxStream = 1 << 20;
  if (static_cast<std::int64_t>(config.microbatches) * config.minibatches > kMaxStream) {
    throw Error(std::to_string(config.microbatches) + " microbatches x " + std::to_string(config.minibatches) +
                " minibatches is more than the " + std::to_string(kMaxStream) + " microbatches a run may stream");
  }
  if (config.processors > 4096) throw Error("at most 4096 processors, got " + std::to_string(config.processors));

  // Route each key=value to the model, the hardware or the schedule.
  Params model_params, hardware_params_, schedule_params;
  std::map<std::string, std::string> record;
  const Params given = Params::parse(config.params);
  for (const auto& [key, value] : given.values()) {
    const std::size_t dot = key.find('.');
    std::string owner, name = key;
    if (dot != std::string::npos) {
      owner = key.substr(0, dot);
      name = key.substr(dot + 1);
      if (owner != "model" && owner != "hardware" && owner != "schedule") {
        throw Error("parameter '" + key + "': the prefix must be model., hardware. or schedule.");
      }
    } else {
      std::vector<std::string> owners;
      if (declares(model_specs, key)) owners.push_back("model");
      if (declares(hardware_specs, key)) owners.push_back("hardware");
      if (declares(entry.params, key)) owners.push_back("schedule");
      if (owners.size() > 1) {
        throw Error("parameter '" + key + "' is accepted by both the " + owners[0] + " and the " +
                    owners[1] + "; write " + owners[0] + "." + key + "=... or " + owners[1] + "." +
                    key + "=...");
      }
      if (owners.empty()) {
        std::vector<std::string> all;
        for (const auto* specs : {&model_specs, &hardware_specs, &entry.params}) {
          for (const auto& spec : *specs) all.push_back(spec.name);
        }
        throw Error(unknown_name_message("parameter for model " + config.model + ", hardware " +
                                             config.hardware + " and schedule " + config.schedule,
                                         key, all));
      }
      owner = owners.front();
    }
    (owner == "model" ? model_params : owner == "hardware" ? hardware_params_ : schedule_params)
        .set(name, value);
    record[owner + "." + name] = value;
  }
  schedule_params.check_known(entry.params, "schedule " + entry.name);

  ScheduleRequest request;
  request.network = make_network(config.model, model_params);
  request.hardware = make_hardware(config.hardware, hardware_params_);
  if (config.calibration) {
    attach_calibration(request.hardware, *config.calibration, request.network);
  } else if (!config.calibration_file.empty()) {
    attach_calibration(request.hardware, load_calibration(config.calibration_file), request.network);
  }
  request.processors = config.processors;
  request.microbatches = config.microbatches;
  request.minibatches = config.minibatches;
  request.params = schedule_params;
  if (request.network.batch % config.microbatches != 0) {
    throw Error("batch " + std::to_string(request.network.batch) + " of model " +
                request.network.name + " does not split into " + std::to_string(config.microbatches) +
                " equal microbatches; set batch=... to a multiple of the microbatches");
  }
  record["model.batch"] = std::to_string(request.network.batch);
  request.resolved_parameters = record;
  // Tensor parallelism: the network as one rank holds and runs it (what the graph is priced with
  // and what an executor splits).
  const Parallelism split = parallelism(request.params);  // checks tp, dp and the rest
  if (split.tensor > 1) request.network = tensor_parallel_network(request.network, split.tensor, split.sequence_parallel);
  return request;
}

TaskGraph make_graph(const GraphConfig& config) {
  ScheduleRequest request = make_request(config);
  const ScheduleEntry& entry = find_schedule(config.schedule);
  const Parallelism parallel = parallelism(request.params);
  const int t = parallel.tensor, d = parallel.replicas;
  // Every generated graph: each task's weights priced as warm as its processor's order leaves them
  // against the table's timed order, the backwards that go back to a linear output again priced warm, those
  // that assemble their output's gradient from a split BA's slices charged for it, the copies a
  // calibration puts on the cores, and the parameters.
  const auto finished = [&request](TaskGraph graph) {
    charge_weight_reuse(graph, request.hardware, request.network);
    price_waits(graph, request.hardware, request.network);
    charge_warm_to_linear(graph, request.hardware, request.network);
    charge_gradient_assemblies(graph, request.hardware, request.network);
    if (copies_take_cores(graph, request.hardware)) charge_copies_to_cores(graph, *request.hardware.calibration);
    graph.parameters = request.resolved_parameters;
    return graph;
  };
  if (t * d == 1) return finished(entry.generate(request));
  // t x d GPUs per pipeline processor: the pipeline's processors are tensor-parallel groups, one
  // pipeline generated and replicated d times.
  if (request.processors % (t * d) != 0) {
    throw Error("tp=" + std::to_string(t) + " x dp=" + std::to_string(d) + " needs the processors (GPUs) to be a multiple of " +
                std::to_string(t * d) + "; " + std::to_string(request.processors) + " processors do not divide");
  }
  if (t > 1) {  // make_request has split the network
    ClusterSpec& cluster = request.hardware.cluster;
    if (cluster.clustered() && (cluster.processors_per_node % t != 0 || cluster.nics_per_node != cluster.processors_per_node)) {
      throw Error("tp=" + std::to_string(t) + " needs tensor-parallel groups inside a node (processors_per_node " +
                  std::to_string(cluster.processors_per_node) + " a multiple of it) and a NIC per GPU (nics_per_node " +
                  std::to_string(cluster.nics_per_node) + "), so that each group's GPUs are alike");
    }
    cluster.ranks_per_processor = t;
  }
  request.processors /= t * d;
  TaskGraph graph = entry.generate(request);
  if (d > 1) graph = replicate_data_parallel(graph, request.hardware, parallel);
  return finished(std::move(graph));
}

}  // namespace pipetwin
