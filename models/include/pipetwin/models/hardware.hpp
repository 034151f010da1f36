// Hardware profiles: processors, the link between them, the host link for offload, and the
// topology. Profiles are small JSON files (models/data/hardware, embedded in the binary) or a
// user's file; links are JSON files too (models/data/links). Quantities in the files are in
// natural units (Hz, FLOP/s, bytes/s, seconds); the cost model turns them into cycles.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pipetwin/models/link_policy.hpp"
#include "pipetwin/models/params.hpp"
#include "pipetwin/models/systolic_array.hpp"

namespace pipetwin {

enum class CostModelKind {
  unit,      // every F, BA, BW of a layer is 1 cycle, B is 2, U and transfers 0 (LayerPipe's model)
  roofline,  // overhead + max(FLOPs / (peak x efficiency), bytes / memory bandwidth)
  operator_level,  // GPUs: each layer's kernels timed from their GEMM tiles and bytes (gpu_timing.hpp)
  systolic,  // a systolic array: each layer's GEMMs in folds of the array, SCALE-Sim's count (systolic_array.hpp)
};

// The model the simulator gives each processor (docs/accelerators.md): "fixed" takes each task's
// cycles from the graph (the cost model's), "systolic" computes them from the layers' shapes, and
// a user's model registered by name does what it likes with its settings.
struct AcceleratorSpec {
  std::string model = "fixed";
  std::map<std::string, std::string> settings;  // the hardware file's other "accelerator" keys, as text
};

// The operator-level model's figures for a GPU (cost_model "operator"); docs/cost-model.md gives
// each one's source.
struct GpuSpec {
  double gemm_efficiency = 0;    // fraction of the tensor peak a GEMM tile's main loop reaches
  double l2_bytes_per_s = 0;     // L2 bandwidth, which feeds the tiles their operands
  double memory_efficiency = 0;  // fraction of the DRAM bandwidth memory-bound kernels reach
  double fp32_flops_per_s = 0;   // CUDA-core FP32 peak, for element-wise work
  double kernel_s = 0;           // the least time one kernel takes on the GPU, launch gap included
  double dispatch_s = 0;         // host time of one framework operator (Python, autograd, dispatcher)
  double launch_s = 0;           // host time of one CUDA kernel launch (driver and runtime)
};

std::string to_string(CostModelKind kind);  // "unit", "roofline", "operator"

struct LinkSpec {
  std::string name;
  std::string description;
  double bytes_per_s = 0;   // per direction
  double latency_s = 0;     // per hop
  // Parts of latency_s that a calibration timed apart (LinkInfo::wake_cycles, delivery_cycles): the
  // link thread's wake-up, paid only when it waited for the transfer, and the reader's, outside
  // the link's hold. 0: latency_s holds the link whole.
  double wake_s = 0;
  double delivery_s = 0;
  bool shared = false;      // one medium for all pairs (a bus or a switch port)
  LinkPolicy policy = LinkPolicy::in_order;  // how each link serves its transfers
};

// Processors grouped into nodes (docs/design.md, "Links"): inside a node the profile's `link` joins
// them as its topology says; between nodes a transfer leaves through its processor's NIC, one
// per processor ("rail-optimised", as DGX nodes) or shared by several, over a non-blocking fabric.
struct ClusterSpec {
  std::int32_t processors_per_node = 0;  // 0: one node holds every processor (no NICs)
  std::int32_t nics_per_node = 0;        // NICs of a node; processor k of a node uses NIC k mod this
  LinkSpec nic;                          // a NIC's bandwidth per direction and end-to-end latency
  std::string source;                    // where the node's figures come from
  // GPUs each processor of a graph stands for (a tensor-parallel group in lockstep; its first
  // GPU's links are simulated, the others' are alike): processor k is GPUs k x this and on.
  std::int32_t ranks_per_processor = 1;

  bool clustered() const { return processors_per_node > 0; }
  std::int32_t node_of(std::int32_t processor) const {
    return clustered() ? processor * ranks_per_processor / processors_per_node : 0;
  }
  std::int32_t nic_of(std::int32_t processor) const {
    return clustered() ? (processor * ranks_per_processor % processors_per_node) % nics_per_node : 0;
  }
};

struct ProcessorSpec {
  double clock_hz = 1;
  double peak_flops_per_s = 0;     // at the selected precision
  double efficiency = 1;           // fraction of peak reached by dense layers
  std::int64_t memory_bytes = 0;   // capacity
  double memory_bytes_per_s = 0;   // bandwidth
  double task_overhead_s = 0;      // fixed cost per task
  double layer_overhead_s = 0;     // fixed cost per layer in a task (kernel launches)
  std::int64_t sm_count = 0;       // GPUs: SMs this processor has (0 = not a GPU)
  bool shared_memory_system = false;  // processors share one memory system (SM partitions)
  GpuSpec gpu;                     // cost_model "operator" only
  AcceleratorSpec accelerator;     // what the simulator's processor modules model
  SystolicSpec systolic;           // accelerator "systolic" (and cost_model "systolic") only
};

// All-reduces inside a node as measured there (the profile's "all_reduce" object): seconds by
// message size for each number of GPUs taking part, from a benchmark of the collective library
// on that node. Tensor-parallel groups of a measured size take their all-reduces' time from it
// (cost_model.cpp); other sizes, and the data-parallel all-reduces (collective steps over the
// links), keep the ring over the profile's link.
struct MeasuredAllReduce {
  std::map<std::int32_t, std::vector<std::pair<double, double>>> seconds_by_bytes;  // ranks -> (bytes, seconds), bytes rising
  std::string source;  // where the measurement comes from

  bool covers(std::int32_t ranks) const { return seconds_by_bytes.count(ranks) > 0; }
  // One all-reduce of `bytes` among `ranks` GPUs (covers(ranks)): linear between the measured
  // sizes; below the smallest, linear from `zero_bytes_s` at 0 bytes (the caller's latency) to
  // the smallest's time; above the largest, the two largest sizes' slope.
  double seconds(std::int32_t ranks, double bytes, double zero_bytes_s) const;
};

struct Calibration;  // calibration.hpp

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string source;                  // "built-in" or the file it came from
  CostModelKind cost_model = CostModelKind::roofline;
  std::string precision;               // "fp32", "tf32", "bf16", ...
  ProcessorSpec processor;
  LinkSpec link;                       // between processors
  LinkSpec host_link;                  // to host memory, for offload
  std::string topology = "fully-connected";  // chain, ring, fully-connected, switch (inside a node)
  ClusterSpec cluster;                 // nodes and their NICs; none: one node
  MeasuredAllReduce all_reduce;        // measured all-reduces inside a node; none: rings over `link`
  std::int64_t host_memory_bytes = 0;  // host memory reachable over host_link, for offload
  bool validated = false;              // checked against measurement?
  // Measured task times replacing the roofline (calibration.hpp), when attached.
  std::shared_ptr<const Calibration> calibration;

  double clock_hz() const { return processor.clock_hz; }
  double seconds(std::int64_t cycles) const { return static_cast<double>(cycles) / clock_hz(); }
};

struct HardwareEntry {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
};

// Profiles registered by name (the embedded files); a name ending in .json is a user file.
std::vector<HardwareEntry> hardware_entries();
std::vector<ParamSpec> hardware_params(const std::string& name);
HardwareProfile make_hardware(const std::string& name, const Params& params);

std::vector<std::string> link_names();
LinkSpec make_link(const std::string& name);

HardwareProfile hardware_from_json_text(const std::string& text, const std::string& source,
                                        const Params& params);
LinkSpec link_from_json_text(const std::string& text, const std::string& source);

const std::vector<std::string>& topology_names();

}  // namespace pipetwin
