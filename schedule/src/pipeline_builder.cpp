// Stage pipelines from per-processor operation sequences: tasks, transfers, dependencies,
// weight versions and buffers.
#include "pipetwin/schedule/pipeline_builder.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/schedule/buffers.hpp"
#include "pipetwin/schedule/weight_versions.hpp"
#include "link_tasks.hpp"

namespace pipetwin {
namespace {

using Key = std::tuple<int, int, int>;  // (stage, minibatch, microbatch)

// The sum of one per-layer size (per sample, or per stage for parameters) over a stage's layers.
std::int64_t stage_sum(const Network& net, const StageInfo& stage, std::int64_t Layer::*size) {
  return net.layer_sum(stage.first_layer, stage.last_layer, size);
}

}  // namespace

LayerCosts layer_costs(const ScheduleRequest& request) {
  const std::int64_t samples = request.network.batch / request.microbatches;
  LayerCosts costs;
  for (const auto& layer : request.network.layers) {
    costs.cycles.push_back(layer_work_cycles(request.hardware, layer, TaskKind::F, samples) +
                           layer_work_cycles(request.hardware, layer, TaskKind::B, samples));
    costs.cut_allowed.push_back(layer.cut_allowed_after);
  }
  return costs;
}

StagePlan plan_stages(const ScheduleRequest& request, int stage_count) {
  const Network& net = request.network;
  const LayerCosts layers = layer_costs(request);
  const auto& costs = layers.cycles;
  const auto& allowed = layers.cut_allowed;
  StagePlan plan;
  if (request.params.has("cuts")) {
    std::vector<int> cuts;
    for (const auto cut : request.params.get_int_list("cuts", {})) cuts.push_back(static_cast<int>(cut));
    if (static_cast<int>(cuts.size()) + 1 != stage_count) {
      throw Error("cuts=" + request.params.get_string("cuts", "") + " makes " +
                  std::to_string(cuts.size() + 1) + " stages, but this schedule needs " +
                  std::to_string(stage_count) + " (one per processor)");
    }
    plan.partition = fixed_partition(costs, allowed, cuts);
  } else {
    try {
      plan.partition = balanced_partition(costs, allowed, stage_count);
    } catch (const Error& error) {
      throw Error("model " + net.name + ": " + error.what());
    }
  }
  for (int s = 0; s < stage_count; ++s) plan.stage_processor.push_back(s % request.processors);
  return plan;
}

TaskGraph empty_graph(const ScheduleRequest& request, const std::string& schedule_name,
                      WeightSemantics semantics) {
  const HardwareProfile& hw = request.hardware;
  TaskGraph g;
  g.schedule = schedule_name;
  g.model = request.network.name;
  g.hardware = hw.name;
  g.accelerator = hw.processor.accelerator.model;
  g.accelerator_settings = hw.processor.accelerator.settings;
  g.semantics = semantics;
  g.microbatches = request.microbatches;
  g.minibatches = request.minibatches;
  g.samples_per_microbatch = request.network.batch / request.microbatches;
  g.clock_hz = hw.clock_hz();
  g.host_memory_capacity_bytes = hw.host_memory_bytes;
  for (int p = 0; p < request.processors; ++p) {
    // SM partitions of one GPU share its memory system; whole GPUs have their own.
    g.processors.push_back({"p" + std::to_string(p), hw.processor.memory_bytes, 0,
                            hw.processor.shared_memory_system ? 0 : -1});
  }
  return g;
}

namespace {

// p2p=rendezvous: blocking send and receive (DeepSpeed's pipeline engine). A transfer between two
// processors' tasks starts only once its receiver has finished the task before the one that
// consumes it (the receive is posted in program order), and the sender's next task waits for the
// transfer to end (the send returns when the data is across).
void add_rendezvous(TaskGraph& g) {
  const auto by_processor = tasks_by_processor(g);
  std::vector<std::int32_t> position(g.tasks.size(), -1);
  for (const auto& list : by_processor) {
    for (std::size_t i = 0; i < list.size(); ++i) position[static_cast<std::size_t>(list[i])] = static_cast<std::int32_t>(i);
  }
  std::vector<std::vector<std::int32_t>> consumers(g.tasks.size());
  for (const auto& t : g.tasks) {
    for (const auto& d : t.deps) consumers[static_cast<std::size_t>(d.task)].push_back(t.id);
  }
  for (std::size_t x = 0; x < g.tasks.size(); ++x) {
    const Task& transfer = g.tasks[x];  // no task is added below: references stay valid
    if (transfer.kind != TaskKind::X || transfer.placement != Placement::link) continue;
    std::int32_t producer = -1;
    for (const auto& d : transfer.deps) {
      const Task& p = g.tasks[static_cast<std::size_t>(d.task)];
      if (p.placement == Placement::processor &&
          (d.carries == Carries::activation || d.carries == Carries::activation_gradient)) {
        producer = p.id;
      }
    }
    if (producer < 0) continue;  // weights, or a later hop of a multi-hop transfer
    for (const auto consumer : consumers[x]) {
      const Task& c = g.tasks[static_cast<std::size_t>(consumer)];
      if (c.placement != Placement::processor || position[static_cast<std::size_t>(consumer)] <= 0) continue;
      const auto& list = by_processor[static_cast<std::size_t>(c.resource)];
      g.tasks[x].deps.push_back({list[static_cast<std::size_t>(position[static_cast<std::size_t>(consumer)] - 1)],
                                 Carries::order, 0});
    }
    const Task& p = g.tasks[static_cast<std::size_t>(producer)];
    const auto& mine = by_processor[static_cast<std::size_t>(p.resource)];
    const std::size_t next = static_cast<std::size_t>(position[static_cast<std::size_t>(producer)]) + 1;
    if (next < mine.size()) g.tasks[static_cast<std::size_t>(mine[next])].deps.push_back({transfer.id, Carries::order, 0});
  }
}

}  // namespace

TaskGraph build_pipeline(const ScheduleRequest& request, const std::string& schedule_name,
                         WeightSemantics semantics, const StagePlan& plan,
                         const std::vector<std::vector<StageOp>>& processor_ops) {
  const Network& net = request.network;
  const HardwareProfile& hw = request.hardware;
  const int stage_count = static_cast<int>(plan.stage_processor.size());
  const std::int64_t samples = net.batch / request.microbatches;

  TaskGraph g = empty_graph(request, schedule_name, semantics);
  for (int s = 0; s < stage_count; ++s) {
    StageInfo stage{plan.partition.first_layer[s], plan.partition.last_layer[s], plan.stage_processor[s]};
    if (!plan.forward_processor.empty() && plan.forward_processor[s] != stage.processor) {
      stage.forward_processor = plan.forward_processor[s];
    }
    if (!plan.weight_delay.empty()) stage.weight_delay = plan.weight_delay[s];
    g.stages.push_back(stage);
  }
  bool split_stages = false;  // some stage's forwards run away from home
  for (const auto& stage : g.stages) split_stages = split_stages || stage.forward_processor >= 0;
  const bool offload = split_stages || request.params.get_bool("offload", false);

  // Activation recomputation. recompute=full: a forward keeps only its stage's input; an RC right
  // before the stage's backward (its B, or its BA) runs the forward again from that input, with
  // the forward's weight version, and holds the full stash. recompute=selective (Korthikanti et
  // al. 2022): a forward drops only its layers' selective part (attention cores); the RC makes
  // that part again from the rest of the stash. recompute=blocks (Megatron-LM's "full"
  // recomputation, a checkpoint per transformer block): a forward drops its blocks' stashes but
  // their inputs; the RC runs the blocks again. Stages with no such part get no RC.
  const std::string recompute = request.params.get_string("recompute", "none");
  if (recompute != "none" && recompute != "full" && recompute != "selective" && recompute != "blocks") {
    throw Error(unknown_name_message("recompute mode", recompute, {"none", "full", "selective", "blocks"}));
  }
  const RecomputeMode mode = recompute == "full"        ? RecomputeMode::full
                             : recompute == "selective" ? RecomputeMode::selective
                             : recompute == "blocks"    ? RecomputeMode::blocks
                                                        : RecomputeMode::none;
  if (mode != RecomputeMode::none && offload) {
    throw Error("recompute=" + recompute + " and offload=true do not combine: choose one");
  }
  if (mode != RecomputeMode::none && semantics == WeightSemantics::stale) {
    throw Error("recompute=" + recompute + " runs at the forward's weight version, which stale weights do not keep");
  }
  // The part of a stage's stash that a selective or block recomputation makes again.
  const auto recomputed_bytes = [&](const StageInfo& stage) {
    return recomputed_stash_bytes(net, stage.first_layer, stage.last_layer, mode) * samples;
  };
  const auto recomputes = [&](int stage) {
    return mode == RecomputeMode::full || (mode != RecomputeMode::none && recomputed_bytes(g.stages.at(stage)) > 0);
  };
  std::vector<std::vector<StageOp>> with_recompute;  // the sequences with an RC before each B or BA
  const bool recomputing = mode != RecomputeMode::none;
  if (recomputing) {
    for (const auto& list : processor_ops) {
      with_recompute.emplace_back();
      for (const auto& op : list) {
        if ((op.kind == TaskKind::B || op.kind == TaskKind::BA) && recomputes(op.stage)) {
          with_recompute.back().push_back({TaskKind::RC, op.stage, op.minibatch, op.microbatch});
        }
        with_recompute.back().push_back(op);
      }
    }
  }
  const auto& ops = recomputing ? with_recompute : processor_ops;

  // Compute tasks, in each processor's order. A backward is one B, or a BA (activation gradient,
  // sent on to the previous stage) and a BW (weight gradient).
  std::map<Key, std::int32_t> forward, recomputation, input_grad, weight_grad;
  std::vector<std::int32_t> updates, split_weight_grads;
  // A stage's tasks of one kind all cost the same: priced once each (the operator model times
  // every kernel of every layer).
  std::map<std::pair<int, TaskKind>, std::pair<std::int64_t, std::int64_t>> stage_costs;  // -> (cost, memory)
  for (int p = 0; p < static_cast<int>(ops.size()); ++p) {
    std::int32_t order = 0;
    for (const auto& op : ops[p]) {
      const StageInfo& stage = g.stages.at(op.stage);
      const int wanted = op.kind == TaskKind::F ? stage.forward_processor_or_home() : stage.processor;
      if (wanted != p) throw Error("internal: stage " + std::to_string(op.stage) + " op on wrong processor");
      Task t;
      t.id = static_cast<std::int32_t>(g.tasks.size());
      t.kind = op.kind;
      t.first_layer = stage.first_layer;
      t.last_layer = stage.last_layer;
      t.stage = op.stage;
      t.minibatch = op.minibatch;
      t.microbatch = op.microbatch;
      t.resource = p;
      t.order = order++;
      const auto priced = stage_costs.find({op.stage, op.kind});
      if (priced != stage_costs.end()) {
        std::tie(t.cost_cycles, t.memory_cycles) = priced->second;
      } else {
        if (op.kind == TaskKind::RC && mode == RecomputeMode::selective) {
          t.cost_cycles = selective_recompute_cycles(hw, net, stage.first_layer, stage.last_layer, samples, &t.memory_cycles);
        } else if (op.kind == TaskKind::RC && mode == RecomputeMode::blocks) {
          t.cost_cycles = block_recompute_cycles(hw, net, stage.first_layer, stage.last_layer, samples, &t.memory_cycles);
        } else {
          t.cost_cycles = compute_task_cycles(hw, net, op.kind, stage.first_layer, stage.last_layer, samples);
          t.memory_cycles = memory_traffic_cycles(hw, net, op.kind, stage.first_layer, stage.last_layer, samples);
        }
        stage_costs[{op.stage, op.kind}] = {t.cost_cycles, t.memory_cycles};
      }
      const Key key{op.stage, op.minibatch, op.microbatch};
      if (op.kind == TaskKind::F) {
        if (!forward.emplace(key, t.id).second) throw Error("internal: forward twice");
      } else if (op.kind == TaskKind::RC) {
        if (!recomputation.emplace(key, t.id).second) throw Error("internal: recomputation twice");
      } else if (op.kind == TaskKind::B || op.kind == TaskKind::BA || op.kind == TaskKind::BW) {
        if (op.kind != TaskKind::BA && !weight_grad.emplace(key, t.id).second) {
          throw Error("internal: weight gradient twice");
        }
        if (op.kind != TaskKind::BW && !input_grad.emplace(key, t.id).second) {
          throw Error("internal: input gradient twice");
        }
        if (op.kind == TaskKind::BW) split_weight_grads.push_back(t.id);
      } else {
        updates.push_back(t.id);
      }
      g.tasks.push_back(std::move(t));
    }
  }
  const std::size_t expected = static_cast<std::size_t>(stage_count) * request.microbatches *
                               request.minibatches;
  if (forward.size() != expected || input_grad.size() != expected || weight_grad.size() != expected) {
    throw Error("internal: schedule " + schedule_name + " does not run every microbatch on every stage");
  }

  // Transfers between stages on different processors, then dependencies.
  LinkTasks links(g, hw);
  // Data of `source` to the processor of task `consumer`: the boundary layer is the sender's
  // last for activations, its first for gradients.
  auto transfer = [&](std::int32_t source, std::int32_t consumer, Carries carries, std::int64_t bytes) {
    const int boundary = g.tasks[source].kind == TaskKind::F ? g.tasks[source].last_layer
                                                             : g.tasks[source].first_layer;
    return links.transfer(source, g.tasks[consumer].resource, carries, bytes, boundary);
  };
  for (const auto& [key, id] : forward) {
    const auto [s, k, m] = key;
    if (s > 0) {
      const std::int32_t previous = forward.at({s - 1, k, m});
      const std::int64_t bytes = net.activation_bytes_after(g.stages[s - 1].last_layer) * samples;
      const Dep arrival = transfer(previous, id, Carries::activation, bytes);  // may grow g.tasks
      g.tasks[id].deps.push_back(arrival);
    }
  }
  for (const auto& [key, id] : input_grad) {
    const auto [s, k, m] = key;
    const std::int32_t f = forward.at(key);
    const std::int64_t stash = net.stash_bytes(g.stages[s].first_layer, g.stages[s].last_layer, samples);
    const auto rc = recomputation.find(key);
    if (rc != recomputation.end() && mode == RecomputeMode::full) {  // F -> RC (the stage's input) -> the backward
      const std::int64_t kept_input = net.layers[g.stages[s].first_layer].input_bytes * samples;
      g.tasks[rc->second].deps.push_back({f, Carries::stash, kept_input});
      g.tasks[id].deps.push_back({rc->second, Carries::stash, stash});
    } else if (rc != recomputation.end()) {  // F's stash -> RC (the selective or blocks' part) -> the backward, which reads both
      const std::int64_t part = recomputed_bytes(g.stages[s]);
      g.tasks[rc->second].deps.push_back({f, Carries::stash, stash - part});
      g.tasks[id].deps.push_back({f, Carries::stash, stash - part});
      g.tasks[id].deps.push_back({rc->second, Carries::stash, part});
    } else {
      g.tasks[id].deps.push_back({f, Carries::stash, stash});
    }
    if (s + 1 < stage_count) {
      const std::int32_t next = input_grad.at({s + 1, k, m});
      const std::int64_t bytes = net.activation_bytes_after(g.stages[s + 1].first_layer - 1) * samples;
      const Dep arrival = transfer(next, id, Carries::activation_gradient, bytes);  // may grow g.tasks
      g.tasks[id].deps.push_back(arrival);
    }
  }
  order_links_by_earliest_start(g);  // link orders by earliest start, whatever the creation order
  if (offload) {
    // Activation offload: after each forward its stash goes to host memory (freed on the device
    // when the copy ends) and comes back, to the processor of the backward that needs it, before
    // that backward. The reload starts when the task `reload_lookahead` places before that
    // backward ends (2: it overlaps the task just before). Stages whose forwards run away from
    // home always go this way.
    const auto by_processor = tasks_by_processor(g);
    std::vector<std::int32_t> position(g.tasks.size(), 0);
    for (const auto& list : by_processor) {
      for (std::size_t i = 0; i < list.size(); ++i) position[list[i]] = static_cast<std::int32_t>(i);
    }
    for (const auto& [key, f] : forward) {
      const StageInfo& stage = g.stages[std::get<0>(key)];
      const std::int64_t stash = net.stash_bytes(stage.first_layer, stage.last_layer, samples);
      if (stash == 0) continue;
      const std::int32_t backward = input_grad.at(key);
      const std::int32_t p = g.tasks[backward].resource;
      const std::int32_t off = links.link_task(f, TaskKind::OFF, links.host_link(g.tasks[f].resource, true), stash,
                                               {{f, Carries::stash, stash}});
      std::vector<Dep> reload_deps{{off, Carries::stash, stash}};
      if (position[backward] >= plan.reload_lookahead) {
        reload_deps.push_back({by_processor[p][position[backward] - plan.reload_lookahead], Carries::order, 0});
      }
      const std::int32_t on = links.link_task(f, TaskKind::ON, links.host_link(p, false), stash, reload_deps);
      g.tasks[backward].deps.push_back({on, Carries::stash, stash});
    }
  }
  // The weight gradient needs the incoming gradient: what its BA hands it, the gradient at each of
  // the stage's layers' outputs.
  for (const auto id : split_weight_grads) {
    const Task& w = g.tasks[id];
    std::int64_t bytes = 0;
    for (int l = g.stages[w.stage].first_layer; l <= g.stages[w.stage].last_layer; ++l) bytes += net.output_gradient_bytes(l);
    g.tasks[id].deps.push_back({input_grad.at({w.stage, w.minibatch, w.microbatch}), Carries::output_gradients,
                                bytes * samples});
  }
  for (const auto id : updates) {
    Task& u = g.tasks[id];
    const std::int64_t gradient_bytes = stage_sum(net, g.stages[u.stage], &Layer::param_bytes);
    if (u.microbatch >= 0) {
      u.deps.push_back({weight_grad.at({u.stage, u.minibatch, u.microbatch}), Carries::weight_gradient, gradient_bytes});
    } else {
      for (int m = 0; m < request.microbatches; ++m) {
        u.deps.push_back({weight_grad.at({u.stage, u.minibatch, m}), Carries::weight_gradient, gradient_bytes});
      }
    }
  }

  // Weight versions by the one rule; then the buffers.
  assign_weight_versions(g);
  std::map<std::pair<int, int>, std::int32_t> writer;  // (stage, version) -> update
  for (const auto id : updates) writer[{g.tasks[id].stage, g.tasks[id].version_written}] = id;
  if (semantics == WeightSemantics::delayed) {
    // A forward waits for the update that writes its version; away from home the new weights
    // travel to it over the links after the update.
    for (std::size_t id = 0, n = g.tasks.size(); id < n; ++id) {
      if (g.tasks[id].kind != TaskKind::F || g.tasks[id].version_read == 0) continue;
      const Task& f = g.tasks[id];
      const std::int32_t update = writer.at({f.stage, f.version_read});
      const std::int64_t bytes = stage_sum(net, g.stages[f.stage], &Layer::param_bytes);
      const Dep arrival = links.transfer(update, f.resource, Carries::weights, bytes, f.first_layer);
      g.tasks[id].deps.push_back(arrival);
    }
    order_links_by_earliest_start(g);  // weights were added after the activations they overtake
  }
  const std::string p2p = request.params.get_string("p2p", "async");
  if (p2p == "rendezvous") {
    add_rendezvous(g);
  } else if (p2p != "async") {
    throw Error(unknown_name_message("p2p mode", p2p, {"async", "rendezvous"}));
  }
  declare_buffers(g, net, mode);
  return g;
}

}  // namespace pipetwin
