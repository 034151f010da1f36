// Data-parallel replicas of a pipeline graph and their gradient all-reduces (see
// data_parallel.hpp).
#include "pipetwin/schedule/data_parallel.hpp"

#include <algorithm>
#include <map>

#include "collectives.hpp"
#include "link_tasks.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {

std::vector<ParamSpec> parallel_params() {
  return {{"tp", "1", "tensor-parallel ranks t: each processor of the pipeline is a group of t GPUs splitting every "
                      "transformer block, embedding and LM head (Megatron-LM), with their all-reduces over the node's link"},
          {"sp", "0", "1: sequence parallelism (Megatron-LM, Korthikanti et al. 2022) in the tensor-parallel groups: "
                      "each block's layer norms, dropouts and residual adds run on 1/t of the sequence, its input "
                      "and activations there are 1/t, and its all-reduces become reduce-scatters and all-gathers "
                      "of the same bytes (timed as the all-reduces); needs tp > 1"},
          {"dp", "1", "data-parallel replicas d: the processors are split into d pipelines of P/d, each stage's "
                      "gradients all-reduced across them before its update (batch is per replica)"},
          {"allreduce", "ring", "the replicas' all-reduce: ring (one ring over all of them) or hierarchical (rings "
                                "inside each node around rings across the nodes)"},
          {"zero", "0", "1: ZeRO stage 1 / Megatron's distributed optimizer: each replica keeps and updates 1/d of "
                         "the optimizer state (master weights, moments), after a reduce-scatter of the gradients and "
                         "before an all-gather of the weights (timed as the all-reduce they make up)"},
          {"rank_order", "tp-dp-pp", "how ranks are placed, innermost first: tp-dp-pp (a stage's replicas on "
                                     "neighbouring ranks, Megatron-LM's default) or tp-pp-dp (a pipeline's stages)"}};
}

Parallelism parallelism(const Params& params) {
  Parallelism dp;
  const std::int64_t tensor = params.get_int("tp", 1);
  if (tensor < 1 || tensor > 4096) throw Error("tp must be 1 to 4096 ranks, got " + std::to_string(tensor));
  dp.tensor = static_cast<int>(tensor);
  const std::int64_t sequence = params.get_int("sp", 0);
  if (sequence != 0 && sequence != 1) throw Error("sp must be 0 (no sequence parallelism) or 1, got " + std::to_string(sequence));
  if (sequence == 1 && tensor == 1) throw Error("sp=1 (sequence parallelism) splits the sequence among tensor-parallel ranks: it needs tp > 1");
  dp.sequence_parallel = sequence == 1;
  const std::int64_t replicas = params.get_int("dp", 1);
  if (replicas < 1 || replicas > 4096) throw Error("dp must be 1 to 4096 replicas, got " + std::to_string(replicas));
  dp.replicas = static_cast<int>(replicas);
  dp.algorithm = params.get_string("allreduce", "ring");
  to_string(collective_algorithm_from_string(dp.algorithm));  // throws on an unknown name
  const std::int64_t zero = params.get_int("zero", 0);
  if (zero != 0 && zero != 1) throw Error("zero must be 0 (none) or 1 (optimizer state sharded over the replicas), got " + std::to_string(zero));
  dp.zero = zero == 1;
  dp.rank_order = params.get_string("rank_order", "tp-dp-pp");
  if (dp.rank_order != "tp-dp-pp" && dp.rank_order != "tp-pp-dp") {
    throw Error(unknown_name_message("rank order", dp.rank_order, {"tp-dp-pp", "tp-pp-dp"}));
  }
  return dp;
}

int data_parallel_rank(const Parallelism& dp, int replica, int local, int per_replica) {
  return dp.rank_order == "tp-dp-pp" ? replica + dp.replicas * local : local + per_replica * replica;
}

TaskGraph replicate_data_parallel(const TaskGraph& pipeline, const HardwareProfile& hw, const Parallelism& dp) {
  const int d = dp.replicas;
  const int per_replica = pipeline.processor_count();
  if (pipeline.semantics != WeightSemantics::synchronous) {
    throw Error("dp=" + std::to_string(d) + ": data parallelism all-reduces each stage's gradients before one update "
                "per minibatch, which needs synchronous weights; " + pipeline.schedule + " is " + to_string(pipeline.semantics));
  }
  if (!pipeline.collectives.empty()) throw Error("internal: replicating a graph that already has collectives");
  const auto task_count = static_cast<std::int32_t>(pipeline.tasks.size());
  const auto stage_count = static_cast<std::int32_t>(pipeline.stages.size());
  const auto rank = [&](int replica, std::int32_t local) {
    return local == kHost ? kHost : data_parallel_rank(dp, replica, local, per_replica);
  };

  // Every task is held in memory (a few hundred bytes each): the replicas and their all-reduce
  // steps stay within kMaxTasks, far beyond the 4096-GPU configurations studied (a third of a
  // million tasks), or the configuration is a clear error before anything is built.
  constexpr std::int64_t kMaxTasks = std::int64_t{1} << 24;
  const CollectiveAlgorithm algorithm = collective_algorithm_from_string(dp.algorithm);
  std::int64_t steps = 0;
  for (const auto& u : pipeline.tasks) {
    if (u.kind != TaskKind::U) continue;
    std::vector<std::int32_t> ranks;
    for (int r = 0; r < d; ++r) ranks.push_back(rank(r, u.resource));
    std::sort(ranks.begin(), ranks.end());
    steps += all_reduce_steps(hw.cluster, algorithm, ranks);
  }
  const std::int64_t total = static_cast<std::int64_t>(pipeline.tasks.size()) * d + steps;
  if (total > kMaxTasks) {
    throw Error("dp=" + std::to_string(d) + " makes " + std::to_string(total) + " tasks (" + std::to_string(steps) +
                " of them all-reduce steps), more than the " + std::to_string(kMaxTasks) + " a graph may hold; use "
                "fewer replicas, fewer microbatches or minibatches" +
                (dp.algorithm == "ring" ? ", or allreduce=hierarchical (fewer steps across many nodes)" : ""));
  }

  TaskGraph g = pipeline;
  g.processors.assign(static_cast<std::size_t>(per_replica * d), ProcessorInfo{});
  g.links.clear();
  g.stages.clear();
  g.tasks.clear();
  g.buffers.clear();
  g.tasks.reserve(pipeline.tasks.size() * static_cast<std::size_t>(d));
  LinkTasks links(g, hw);
  std::int32_t systems = 0;  // memory systems of one replica (SM partitions of one GPU share one)
  for (const auto& p : pipeline.processors) systems = std::max(systems, p.memory_system + 1);
  for (int r = 0; r < d; ++r) {
    for (int q = 0; q < per_replica; ++q) {
      ProcessorInfo info = pipeline.processors[static_cast<std::size_t>(q)];
      info.name = "p" + std::to_string(rank(r, q));
      if (dp.zero) info.static_bytes = (info.static_bytes + d - 1) / d;  // its optimizer state: 1/d of it
      if (info.memory_system >= 0) info.memory_system += r * systems;  // each replica's GPU has its own
      g.processors[static_cast<std::size_t>(rank(r, q))] = info;
    }
    for (const auto& stage : pipeline.stages) {
      StageInfo copy = stage;
      copy.processor = rank(r, stage.processor);
      if (stage.forward_processor >= 0) copy.forward_processor = rank(r, stage.forward_processor);
      g.stages.push_back(copy);
    }
    // The replica's links, in the pipeline's link order: each link of the pipeline becomes one.
    std::vector<std::int32_t> link_of;
    for (const auto& link : pipeline.links) {
      if (link.src == kHost || link.dst == kHost) {
        link_of.push_back(links.host_link(rank(r, link.src == kHost ? link.dst : link.src), link.dst == kHost));
        continue;
      }
      const auto route = links.route(rank(r, link.src), rank(r, link.dst));
      if (route.size() != 1) {
        throw Error("dp=" + std::to_string(d) + " needs one-hop links between processors (topology fully-connected or "
                    "switch), not " + hw.topology);
      }
      link_of.push_back(route.front());
    }
    const std::int32_t offset = r * task_count;
    for (const auto& t : pipeline.tasks) {
      Task copy = t;
      copy.id += offset;
      if (copy.stage >= 0) copy.stage += r * stage_count;
      for (auto& dep : copy.deps) dep.task += offset;
      if (copy.placement == Placement::processor) {
        copy.resource = rank(r, t.resource);
        if (dp.zero && copy.kind == TaskKind::U) {  // it updates 1/d of the stage's weights
          copy.cost_cycles = (copy.cost_cycles + d - 1) / d;
          copy.memory_cycles = std::min(copy.cost_cycles, (copy.memory_cycles + d - 1) / d);
        }
      } else {
        copy.resource = link_of[static_cast<std::size_t>(t.resource)];
        copy.cost_cycles = links.transfer_cycles(copy.resource, copy.bytes);
      }
      g.tasks.push_back(std::move(copy));
    }
    for (const auto& b : pipeline.buffers) {
      Buffer copy = b;
      if (copy.name.owner >= 0) copy.name.owner += offset;
      if (copy.name.stage >= 0) copy.name.stage += r * stage_count;
      copy.where = rank(r, b.where);
      if (copy.allocated_by >= 0) copy.allocated_by += offset;
      for (auto& t : copy.freed_after) t += offset;
      g.buffers.push_back(std::move(copy));
    }
  }

  // Each stage's gradients, per minibatch, all-reduced across the replicas before their updates.
  for (const auto& u : pipeline.tasks) {
    if (u.kind != TaskKind::U) continue;
    if (u.microbatch >= 0) throw Error("internal: a synchronous update per microbatch");
    std::vector<AllReduceRank> ranks;
    std::int64_t bytes = 0;
    for (int r = 0; r < d; ++r) {
      const Task& update = g.tasks[static_cast<std::size_t>(u.id + r * task_count)];
      std::int32_t ready = -1;  // the update's last weight-gradient producer on its processor
      for (const auto& dep : update.deps) {
        const Task& p = g.tasks[static_cast<std::size_t>(dep.task)];
        if (dep.carries != Carries::weight_gradient || p.placement != Placement::processor || p.resource != update.resource) continue;
        if (ready < 0 || p.order > g.tasks[static_cast<std::size_t>(ready)].order) ready = p.id;
        bytes = std::max(bytes, dep.bytes);
      }
      if (ready < 0) throw Error("internal: " + describe_task(g, update) + " sums no gradient on its processor");
      ranks.push_back({update.resource, ready});
    }
    std::sort(ranks.begin(), ranks.end(), [](const AllReduceRank& a, const AllReduceRank& b) { return a.processor < b.processor; });
    const std::string name = "all-reduce stage " + std::to_string(u.stage) + " minibatch " + std::to_string(u.minibatch);
    const auto done = add_all_reduce(g, links, name, algorithm, ranks, bytes);
    std::map<std::int32_t, std::size_t> by_processor;
    for (std::size_t i = 0; i < ranks.size(); ++i) by_processor[ranks[i].processor] = i;
    for (int r = 0; r < d; ++r) {
      Task& update = g.tasks[static_cast<std::size_t>(u.id + r * task_count)];
      const auto& deps = done[by_processor.at(update.resource)];
      update.deps.insert(update.deps.end(), deps.begin(), deps.end());
    }
  }
  order_links_by_earliest_start(g);
  return g;
}

}  // namespace pipetwin
