// The task-graph IR (docs/design.md): what a schedule is. Every task has a kind, its layers, its
// microbatch, a placement (processor or link), a cost in cycles, typed dependencies (what each
// one carries, and how many bytes), an order on its resource and the weight version it reads or
// writes. Memory is declared buffer by buffer: what each holds, where, how big, which task
// allocates it and after which tasks it is freed. Links say how they serve their transfers (in
// order, or sharing bandwidth). Engines (the analytic evaluator, the SystemC simulator, the
// executors) run a graph; generators build one.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipetwin/models/link_policy.hpp"
#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

enum class Placement { processor, link };

// How a schedule's weights behave (docs/design.md, "Weight versions"), checked by the validator.
enum class WeightSemantics {
  synchronous,  // every forward of minibatch k reads version k; backward reads its forward's
  stashed,      // asynchronous; a backward reads the version its forward read (weight stashing)
  stale,        // asynchronous; no stashing: every task reads the newest version
  double_buffered,  // PipeDream-2BW: the forwards of minibatch k read version k-1 (the one before
                    // the newest); a backward reads its forward's; at most two versions live
  delayed,  // delayed gradients (LayerPipe, PipeFB): the forward of stream position n (minibatch x
            // microbatches + microbatch) on stage s reads version max(0, n - weight_delay(s));
            // a backward reads its forward's (stashed)
};

const char* to_string(Placement placement);
const char* to_string(WeightSemantics semantics);
WeightSemantics weight_semantics_from_string(const std::string& text);

// What flows along a dependency. Generators declare it, the validator checks it against the two
// tasks' kinds, and the executors move data by it; nothing is inferred.
enum class Carries {
  order,                // nothing: the consumer only waits for the producer
  activation,           // the producer's output (its last layer's), the consumer's input
  activation_gradient,  // the gradient at the producer's first layer's input; a BA part's slice
  output_gradients,     // a BA's gradients at its layers' outputs, for the BW of the same layers
  stash,                // the activations a forward stashed, for a backward, offload or reload
  weights,              // the weight version an update wrote, for the tasks that read it
  weight_gradient,      // a backward's weight gradient, for the update that applies it
};

const char* to_string(Carries carries);
Carries carries_from_string(const std::string& text);  // throws on an unknown name

struct Dep {
  std::int32_t task = 0;               // the producer
  Carries carries = Carries::order;
  std::int64_t bytes = 0;              // what it carries (0 for order)
};

struct Task {
  std::int32_t id = 0;
  TaskKind kind = TaskKind::F;
  std::int32_t first_layer = -1;   // layers [first_layer, last_layer]; -1 for none
  std::int32_t last_layer = -1;
  std::int32_t stage = -1;         // owner of the weights it reads or writes; -1 for none
  std::int32_t minibatch = -1;     // optimizer step it belongs to
  std::int32_t microbatch = -1;    // within the minibatch; -1 for per-minibatch tasks (U)
  Placement placement = Placement::processor;
  std::int32_t resource = 0;       // processor or link index
  std::int32_t order = 0;          // position among the tasks of its resource
  std::int64_t cost_cycles = 0;
  std::int64_t memory_cycles = 0;  // of cost_cycles: memory traffic at full bandwidth (0..cost)
  std::vector<Dep> deps;           // tasks that must end before this one starts, and what they bring
  std::int32_t version_read = -1;  // weight version of `stage` it reads; -1 for none
  std::int32_t version_written = -1;  // U: the version it creates
  std::int64_t bytes = 0;          // X, OFF, ON: payload
  std::int32_t part = 0;           // BA: its slice of the microbatch's samples, part of `parts`
  std::int32_t parts = 1;          //     (samples [n part / parts, n (part + 1) / parts)); X: its source's
  std::int32_t collective = -1;    // X: the collective (TaskGraph::collectives) it is a step of; -1 none
  // Processor tasks: the distinct bytes its work reads and writes (weights, activations, stashes,
  // gradients), which a wait before it may have cost its core's caches, at most the footprint
  // the calibration's wait curve was measured over: the engines charge TaskGraph::wait_loss for
  // them at its start (wait_loss.hpp). 0: nothing charged.
  std::int64_t wait_exposed_bytes = 0;
};

// A point of TaskGraph::wait_loss: after its processor waited `wait_cycles` (idle since its
// previous task ended), a task runs `extra_cycles_per_byte` longer per byte of its
// wait_exposed_bytes (docs/design.md, "Waits").
struct WaitLossPoint {
  std::int64_t wait_cycles = 0;
  double extra_cycles_per_byte = 0;
};

// What a declared buffer holds (docs/design.md, "Memory").
enum class BufferKind {
  resident,      // a processor's static bytes, held for the whole run (owner -1)
  weights,       // one weight version of a stage, at its home (owner: the U that wrote it; -1: the initial)
  gradient_sum,  // the weight gradients an update sums in place (owner: that U)
  stash,         // the activations a forward, or its recomputation, keeps for its backward (owner: that F / RC)
  kept_input,    // a recomputed forward's input, until its recomputation (owner: that F)
  output,        // what a task hands its dependents: an activation, gradients, a transfer's copy (owner: the task)
  optimizer_state,  // an executor's optimizer state (momentum), per stage; not declared by generators
};

const char* to_string(BufferKind kind);
BufferKind buffer_kind_from_string(const std::string& text);  // throws on an unknown name

// Which buffer a memory event is about: engines name it when they allocate or free, so that
// measured and declared events can be matched tensor by tensor.
struct BufferName {
  BufferKind kind = BufferKind::output;
  std::int32_t owner = -1;  // the task whose data it holds
  std::int32_t stage = -1;  // weights, optimizer state: the stage
};

inline bool operator<(const BufferName& a, const BufferName& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.owner != b.owner) return a.owner < b.owner;
  return a.stage < b.stage;
}
inline bool operator==(const BufferName& a, const BufferName& b) {
  return a.kind == b.kind && a.owner == b.owner && a.stage == b.stage;
}

// One declared buffer. It is allocated when `allocated_by` starts (before the run for -1) and
// freed when the last of `freed_after` has ended (never, when empty). A buffer that moves (an
// offloaded stash) is one buffer per place it is held.
struct Buffer {
  BufferName name;
  std::int32_t where = 0;                 // processor index, or kHost
  std::int64_t bytes = 0;
  std::int32_t allocated_by = -1;
  std::vector<std::int32_t> freed_after;  // task ids
};

struct ProcessorInfo {
  std::string name;
  std::int64_t memory_capacity_bytes = 0;
  std::int64_t static_bytes = 0;   // held for the whole run, beyond the declared buffers
  std::int32_t memory_system = -1; // processors with the same id >= 0 share memory bandwidth
};

// A link between two processors, or between a processor and host memory (kHost).
constexpr std::int32_t kHost = -1;

struct LinkInfo {
  std::string name;
  std::int32_t src = 0;            // processor index, or kHost
  std::int32_t dst = 0;
  double bytes_per_cycle = 0;
  std::int64_t latency_cycles = 0;
  std::string shared_group;        // links with the same non-empty group share one medium
  LinkPolicy policy = LinkPolicy::in_order;
  // The group is a switch (topology "switch"), not a bus: packet-level links give it an input
  // port per sender and an output queue per receiver; the fluid model shares one medium either way.
  bool switched = false;
  // Two parts of latency_cycles (docs/design.md, "Links"), 0 unless a calibration timed them: on an
  // in-order link, `wake_cycles` is the link thread's wake-up, paid only by a transfer the link
  // waited for (not by one queued when the transfer before it freed the link), and
  // `delivery_cycles` the reader's, after the link is free again (it holds the link no longer).
  std::int64_t wake_cycles = 0;
  std::int64_t delivery_cycles = 0;
};

// A collective operation (docs/design.md, "Collectives"): its steps are X tasks on links, each
// with its bytes, so that the engines simulate contention rather than assume it. The one kind so
// far is an all-reduce of weight gradients (data parallelism), summed into every rank's gradients.
struct CollectiveInfo {
  std::string name;                     // "all-reduce stage 0 minibatch 1"
  std::string algorithm;                // "ring", "hierarchical"
  std::vector<std::int32_t> processors; // the ranks, in the algorithm's order
  std::int64_t bytes = 0;               // what each rank contributes (and ends with)
};

struct StageInfo {
  std::int32_t first_layer = 0;
  std::int32_t last_layer = 0;
  std::int32_t processor = 0;          // home: holds the weights, runs the update
  std::int32_t forward_processor = -1; // where its forwards run, if not at home (PipeFB); -1: home
  std::int32_t weight_delay = 0;       // delayed semantics: updates a forward's weights lag by
  std::int32_t forward_processor_or_home() const { return forward_processor >= 0 ? forward_processor : processor; }
};

struct TaskGraph {
  std::string schedule;
  std::string model;
  std::string hardware;
  // The simulator's processor model and its settings (the hardware's AcceleratorSpec): "fixed"
  // runs each task for its cost_cycles; another computes the cycles from the layers of the
  // network the graph names (docs/accelerators.md).
  std::string accelerator = "fixed";
  std::map<std::string, std::string> accelerator_settings;
  std::map<std::string, std::string> parameters;  // every resolved parameter, for the record
  WeightSemantics semantics = WeightSemantics::synchronous;
  std::int32_t microbatches = 1;          // per minibatch
  std::int32_t minibatches = 1;
  std::int64_t samples_per_microbatch = 1;
  double clock_hz = 1;                    // cycles are counted at this clock
  std::int64_t host_memory_capacity_bytes = 0;
  std::vector<ProcessorInfo> processors;
  std::vector<LinkInfo> links;
  std::vector<StageInfo> stages;
  std::vector<Task> tasks;
  std::vector<Buffer> buffers;
  std::vector<CollectiveInfo> collectives;
  // Figures a generator computed about its own schedule, for the record (layerpipe: the period
  // its modulo scheduler reached and the bounds it is compared with), by name with unit suffix.
  std::map<std::string, double> schedule_metrics;
  // What a wait costs a processor's next task, by the wait (waits ascending; linear between the
  // points, from nothing at no wait, and held beyond the last): a calibration's measured curve
  // (Calibration::wait_curve). Empty: waits cost nothing.
  std::vector<WaitLossPoint> wait_loss;

  std::int32_t processor_count() const { return static_cast<std::int32_t>(processors.size()); }
};

// "F mb3 s1" style label used in messages, DOT and diagrams.
std::string task_label(const Task& task);
// "task 12 (B mb3 stage 1 on p2)" for error messages.
std::string describe_task(const TaskGraph& graph, const Task& task);

// The ids a task depends on, in its deps' order.
std::vector<std::int32_t> dep_ids(const Task& task);

// The samples [begin, end) of a microbatch of `samples` that a task's part covers: a BA part's
// slice at its first layer (LayerPipe's split), all of them for one part.
struct SampleRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
inline SampleRange part_samples(const Task& task, std::int64_t samples) {
  if (task.parts <= 1) return {0, samples};
  return {samples * task.part / task.parts, samples * (task.part + 1) / task.parts};
}
// The first dependency that carries data (not order only), or null: what a transfer moves.
const Dep* data_dependency(const Task& task);
// Where memory of processor `where` (or of host memory, kHost) sits in per-memory lists that hold
// the processors, then host memory.
inline std::size_t memory_slot(const TaskGraph& graph, std::int32_t where) {
  return where == kHost ? graph.processors.size() : static_cast<std::size_t>(where);
}

// Per resource, the task ids in execution order. Throws if orders are not 0..n-1.
std::vector<std::vector<std::int32_t>> tasks_by_processor(const TaskGraph& graph);
std::vector<std::vector<std::int32_t>> tasks_by_link(const TaskGraph& graph);

}  // namespace pipetwin
