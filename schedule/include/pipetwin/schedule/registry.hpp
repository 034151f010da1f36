// Schedules by name plus key=value parameters: the one door the CLI, Python and the tests use.
// `make_graph` also routes a flat parameter list to the model, the hardware and the schedule.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/models/params.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// What every generator is given.
struct ScheduleRequest {
  Network network;
  HardwareProfile hardware;
  int processors = 1;
  int microbatches = 1;   // per minibatch
  int minibatches = 1;
  Params params;          // the schedule's own parameters
  std::map<std::string, std::string> resolved_parameters;  // every parameter, "owner.key" -> value
};

struct ScheduleEntry {
  std::string name;
  std::string description;
  WeightSemantics semantics;
  std::vector<ParamSpec> params;
  std::function<TaskGraph(const ScheduleRequest&)> generate;
  bool standalone = true;  // false: needs a parameter with no default (torch-csv's file)
};

const std::vector<ScheduleEntry>& schedule_entries();
const ScheduleEntry& find_schedule(const std::string& name);  // throws with a suggestion
std::vector<std::string> schedule_names();
std::vector<std::string> standalone_schedule_names();  // what "all" means in sweeps

// Everything a graph is built from, by name.
struct GraphConfig {
  std::string model = "resnet56";
  std::string schedule = "1f1b";
  std::string hardware = "h100";
  int processors = 1;
  int microbatches = 8;
  int minibatches = 2;
  // key=value items; a key goes to whichever of model, hardware and schedule declares it, or
  // to the one its prefix names (model.batch=64, hardware.efficiency=0.5, schedule.cuts=3,7).
  std::vector<std::string> params;
  // A calibration table (pipetwin profile) replacing the hardware's roofline; empty for none.
  std::string calibration_file;
  // The same, already in memory (wins over the file).
  std::shared_ptr<const Calibration> calibration;
};

// A configuration by its parts (no parameters, no calibration).
GraphConfig graph_config(const std::string& model, const std::string& schedule, const std::string& hardware,
                         int processors, int microbatches, int minibatches);

TaskGraph make_graph(const GraphConfig& config);
// What make_graph generates from: the network, hardware and schedule parameters `config` names
// (engines that run real layers need the network).
ScheduleRequest make_request(const GraphConfig& config);
// Attaches a calibration table to `hardware` (its times replace the roofline, its copy bandwidth
// the links'); throws unless it covers every layer of `network`.
void attach_calibration(HardwareProfile& hardware, const Calibration& calibration, const Network& network);

// For runs of several schedules with one parameter list (sweeps): `config` without the parameters
// that only other registered schedules take (so tolerance=0.1 reaches layerwise-merge and is not
// an error for gpipe). Parameters nobody takes are kept, so they still fail loudly.
GraphConfig without_other_schedules_params(GraphConfig config);

// `config` as one replica on one GPU: data and tensor parallelism's parameters (tp, dp, allreduce,
// rank_order) dropped, for
// the P = 1 baseline a speedup is measured against.
GraphConfig single_replica(GraphConfig config);
// The data-parallel replicas a graph was made with (its schedule.dp parameter); 1 when none. A
// graph of d replicas trains d batches per iteration.
int graph_replicas(const TaskGraph& graph);
// The tensor-parallel ranks each processor of a graph stands for (its schedule.tp); 1 when none.
int graph_tensor_parallel(const TaskGraph& graph);
// The GPUs a graph stands for: its processors, times the tensor-parallel ranks of each (tp=).
int graph_gpus(const TaskGraph& graph);
// The network a graph was built for, from its model and recorded model.* parameters, its layers
// split as its tp= says (make_request's rule). Throws when the model cannot be built again.
Network graph_network(const TaskGraph& graph);

}  // namespace pipetwin
