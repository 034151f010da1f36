// Initial weights and the input check every executor shares (see training.hpp).
#include "pipetwin/exec/training.hpp"

#include <cmath>

#include "pipetwin/exec/layers/layer_spec.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace pipetwin {

std::vector<HostWeights> initial_weights(const Network& network, std::uint64_t seed) {
  std::vector<HostWeights> weights;
  const auto specs = exec::make_layer_specs(network.layers);
  for (std::size_t l = 0; l < specs.size(); ++l) weights.push_back(specs[l].initial_parameters(seed * 1000003u + l));
  return weights;
}

TransferThreads parse_transfer_threads(const std::string& name) {
  if (name == "auto") return TransferThreads::automatic;
  if (name == "links") return TransferThreads::links;
  if (name == "senders") return TransferThreads::senders;
  throw Error("transfer threads must be auto, links or senders, got '" + name + "'");
}

void check_training_options(const TrainingOptions& options) {
  if (!(options.learning_rate > 0) || !std::isfinite(options.learning_rate)) {
    throw Error("the learning rate must be a positive number, got " + short_number(options.learning_rate));
  }
  if (!(options.momentum >= 0 && options.momentum < 1)) {
    throw Error("momentum must be in [0, 1), got " + short_number(options.momentum));
  }
  if (!(options.handoff_spin_s == kAutomaticHandoffSpin || (options.handoff_spin_s >= 0 && options.handoff_spin_s <= 1))) {
    throw Error("the handoff spin must be from 0 to 1 second (or automatic), got " + short_number(options.handoff_spin_s));
  }
}

double automatic_handoff_spin_s(std::int32_t processors) {
  return processors > 1 && processors == usable_cpu_count() ? kHandoffSpinWhereEveryCoreHasAThread_s : 0.0;
}

double handoff_spin_for(std::int32_t processors, double asked, bool other_threads_need_cores) {
  if (asked != kAutomaticHandoffSpin) return asked;
  return other_threads_need_cores ? 0.0 : automatic_handoff_spin_s(processors);
}

void check_executor_network(const Network& network) {
  if (network.activation_memory != "executor") {
    throw Error("the executors keep their own activations; activation_memory=" + network.activation_memory +
                " is for predictions only");
  }
  if (network.optimizer.kind == OptimizerKind::adam || network.optimizer.master_weights) {
    throw Error("the executors train with SGD (momentum through the training options) in fp32; optimizer=" +
                to_string(network.optimizer.kind) + (network.optimizer.master_weights ? " with master_weights" : "") +
                " is for predictions only");
  }
}

void check_run_inputs(const TaskGraph& graph, const Network& network, const BatchSampler& data) {
  if (graph.model != network.name) {
    throw Error("the graph was built for " + graph.model + ", not for " + network.name);
  }
  if (data.samples_per_microbatch() != graph.samples_per_microbatch) {
    throw Error("the data sampler deals " + std::to_string(data.samples_per_microbatch()) +
                " samples per microbatch, the graph has " + std::to_string(graph.samples_per_microbatch));
  }
  const std::int64_t features = shape_elements(network.input_shape);
  if (data.data().samples.rows() != features) {
    throw Error("dataset " + data.data().name + " has samples of " + shape_to_string(data.data().sample_shape) +
                ", but " + network.name + " takes " + shape_to_string(network.input_shape));
  }
  const std::int32_t replicas = graph_replicas(graph);
  if (data.microbatches() != graph.microbatches * replicas) {
    throw Error("the data sampler deals " + std::to_string(data.microbatches()) + " microbatches per minibatch; the graph's " +
                std::to_string(replicas) + " replica(s) of " + std::to_string(graph.microbatches) + " take " +
                std::to_string(graph.microbatches * replicas));
  }
  check_executor_network(network);
  exec::make_layer_specs(network.layers);  // throws, naming the layer, for what the executors cannot run
  const Layer& last = network.layers.back();
  if (last.dense.out_features < data.data().classes) {
    throw Error(network.name + " has " + std::to_string(last.dense.out_features) + " outputs, but dataset " +
                data.data().name + " has " + std::to_string(data.data().classes) + " classes");
  }
}

BatchSampler graph_sampler(const Dataset& data, const TaskGraph& graph, const Network& network, std::uint64_t seed) {
  const std::int32_t replicas = graph_replicas(graph);
  return BatchSampler(data, network.batch * replicas, graph.microbatches * replicas, graph.minibatches, seed);
}

}  // namespace pipetwin
