// Declares a generated graph's buffers from its data flow (see buffers.hpp).
#include "pipetwin/schedule/buffers.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "pipetwin/models/error.hpp"

namespace pipetwin {

bool reads_output(const Task& producer, const Task& consumer, const Dep& d) {
  // A collective reduces in place in its ranks' gradient sums, through the communication
  // library's own fixed staging buffers, which no task owns.
  if (producer.collective >= 0 || consumer.collective >= 0) return false;
  const bool copy = producer.placement == Placement::link;  // a transfer's output is its copy
  switch (d.carries) {
    case Carries::order:
      return false;
    case Carries::activation:
    case Carries::activation_gradient:
    case Carries::output_gradients:
      return true;
    case Carries::stash:    // F / RC / OFF / ON: the stash buffer itself
    case Carries::weights:  // U: the version it wrote
      return copy && producer.kind == TaskKind::X;
    case Carries::weight_gradient:  // summed in place by an update on the same processor
      return copy || consumer.kind != TaskKind::U || consumer.placement != Placement::processor ||
             consumer.resource != producer.resource;
  }
  return false;
}

namespace {

using StashKey = std::tuple<std::int32_t, std::int32_t, std::int32_t>;  // (first layer, minibatch, microbatch)

StashKey key_of(const Task& t) { return {t.first_layer, t.minibatch, t.microbatch}; }

void add_outputs(TaskGraph& g) {
  constexpr std::size_t kCarries = static_cast<std::size_t>(Carries::weight_gradient) + 1;
  struct Readers {
    std::vector<std::int32_t> tasks;
    std::array<std::int64_t, kCarries> bytes{};  // per kind of data: what the readers take
  };
  std::vector<Readers> readers(g.tasks.size());
  for (const auto& c : g.tasks) {
    for (const auto& d : c.deps) {
      const Task& p = g.tasks[static_cast<std::size_t>(d.task)];
      if (!reads_output(p, c, d)) continue;
      Readers& r = readers[static_cast<std::size_t>(d.task)];
      if (r.tasks.empty() || r.tasks.back() != c.id) r.tasks.push_back(c.id);
      auto& bytes = r.bytes[static_cast<std::size_t>(d.carries)];
      bytes = std::max(bytes, d.bytes);
    }
  }
  for (std::size_t id = 0; id < readers.size(); ++id) {
    Readers& r = readers[id];
    if (r.tasks.empty()) continue;
    const Task& p = g.tasks[id];
    std::int64_t bytes = p.bytes;  // a transfer holds its copy
    std::int32_t where = p.resource;
    if (p.placement == Placement::link) {
      where = g.links[static_cast<std::size_t>(p.resource)].dst;
    } else {
      bytes = 0;
      for (const auto b : r.bytes) bytes += b;
    }
    const auto owner = static_cast<std::int32_t>(id);
    g.buffers.push_back({{BufferKind::output, owner, -1}, where, bytes, owner, std::move(r.tasks)});
  }
}

// Stashes, kept inputs and the stash's moves to host memory and back.
void add_stashes(TaskGraph& g, const Network& net, RecomputeMode recompute) {
  std::map<StashKey, std::vector<std::int32_t>> backwards;  // the backward tasks reading each stash
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::processor && is_backward(t.kind)) backwards[key_of(t)].push_back(t.id);
  }
  std::map<std::int32_t, std::int32_t> recomputation, move;  // F -> its RC; stash holder -> OFF / ON
  for (const auto& t : g.tasks) {
    for (const auto& d : t.deps) {
      if (d.carries != Carries::stash) continue;
      if (t.kind == TaskKind::RC) recomputation[d.task] = t.id;
      if (t.kind == TaskKind::OFF || t.kind == TaskKind::ON) move[d.task] = t.id;
    }
  }
  const std::int64_t samples = g.samples_per_microbatch;
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::F) continue;
    const std::int64_t bytes = net.stash_bytes(t.first_layer, t.last_layer, samples);
    const auto readers = backwards.find(key_of(t));
    if (readers == backwards.end()) continue;  // nothing reads it: the forward keeps nothing
    std::int32_t holder = t.id;
    const auto rc = recomputation.find(t.id);
    if (rc != recomputation.end() && (recompute == RecomputeMode::selective || recompute == RecomputeMode::blocks)) {
      // The forward keeps all but the selective (or blocks') part; its RC makes that part again.
      const std::int64_t part = recomputed_stash_bytes(net, t.first_layer, t.last_layer, recompute) * samples;
      // Blocks are made again one at a time, each freed before the next: the largest is the most
      // the recomputation holds (the RC task stands for all of them).
      const std::int64_t held = recompute == RecomputeMode::blocks
                                    ? net.largest_block_recompute_bytes(t.first_layer, t.last_layer) * samples
                                    : part;
      g.buffers.push_back({{BufferKind::stash, t.id, -1}, t.resource, bytes - part, t.id, readers->second});
      g.buffers.push_back({{BufferKind::stash, rc->second, -1}, t.resource, held, rc->second, readers->second});
      continue;
    }
    if (rc != recomputation.end()) {  // the forward's stash lives while it runs; its input until the RC
      g.buffers.push_back({{BufferKind::stash, t.id, -1}, t.resource, bytes, t.id, {t.id}});
      const std::int64_t input = net.layers[static_cast<std::size_t>(t.first_layer)].input_bytes * samples;
      g.buffers.push_back({{BufferKind::kept_input, t.id, -1}, t.resource, input, t.id, {rc->second}});
      holder = rc->second;
    }
    const std::int32_t owner = holder;
    std::int32_t where = g.tasks[static_cast<std::size_t>(holder)].resource;
    for (auto next = move.find(holder); next != move.end(); next = move.find(holder)) {
      g.buffers.push_back({{BufferKind::stash, owner, -1}, where, bytes, holder, {next->second}});
      holder = next->second;
      where = g.links[static_cast<std::size_t>(g.tasks[static_cast<std::size_t>(holder)].resource)].dst;
    }
    g.buffers.push_back({{BufferKind::stash, owner, -1}, where, bytes, holder, readers->second});
  }
}

void add_weights(TaskGraph& g, const Network& net) {
  const std::size_t stages = g.stages.size();
  std::vector<std::map<std::int32_t, std::vector<std::int32_t>>> readers(stages);  // per stage, per version
  std::vector<std::map<std::int32_t, std::int32_t>> writer(stages);
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::processor || t.stage < 0) continue;
    const auto s = static_cast<std::size_t>(t.stage);
    if (t.version_read >= 0) readers[s][t.version_read].push_back(t.id);
    if (t.kind == TaskKind::U) writer[s][t.version_written] = t.id;
  }
  for (std::size_t s = 0; s < stages; ++s) {
    const StageInfo& stage = g.stages[s];
    const std::int64_t bytes = net.layer_sum(stage.first_layer, stage.last_layer, &Layer::param_bytes);
    const std::int32_t newest = writer[s].empty() ? 0 : writer[s].rbegin()->first;
    std::vector<std::pair<std::int32_t, std::int32_t>> versions{{0, -1}};  // (version, writer)
    for (const auto& [v, u] : writer[s]) versions.emplace_back(v, u);
    for (const auto& [v, u] : versions) {
      std::vector<std::int32_t> freed_after = v == newest ? std::vector<std::int32_t>{} : readers[s][v];
      g.buffers.push_back({{BufferKind::weights, u, static_cast<std::int32_t>(s)}, stage.processor, bytes, u,
                           std::move(freed_after)});
    }
  }
  // Gradients an update sums in place, from the first weight-gradient task on its processor.
  for (const auto& u : g.tasks) {
    if (u.kind != TaskKind::U) continue;
    std::int32_t first = -1;
    std::int64_t bytes = 0;
    for (const auto& d : u.deps) {
      const Task& p = g.tasks[static_cast<std::size_t>(d.task)];
      if (d.carries != Carries::weight_gradient || reads_output(p, u, d) || p.placement != Placement::processor) continue;
      if (first < 0 || p.order < g.tasks[static_cast<std::size_t>(first)].order) first = p.id;
      bytes = std::max(bytes, d.bytes);
    }
    if (first >= 0) g.buffers.push_back({{BufferKind::gradient_sum, u.id, u.stage}, u.resource, bytes, first, {u.id}});
  }
}

// The optimizer's state (momentum, Adam's moments, mixed precision's fp32 master weights and
// gradients) for each stage's parameters, held on the stage's processor for the whole run.
void add_optimizer_state(TaskGraph& g, const Network& net) {
  const std::int64_t per_parameter = net.optimizer.state_bytes_per_parameter();
  for (auto& processor : g.processors) processor.static_bytes = 0;
  if (per_parameter == 0) return;
  for (const auto& stage : g.stages) {
    if (stage.processor < 0 || stage.processor >= static_cast<std::int32_t>(g.processors.size())) continue;
    g.processors[static_cast<std::size_t>(stage.processor)].static_bytes +=
        net.layer_sum(stage.first_layer, stage.last_layer, &Layer::parameters) * per_parameter;
  }
}

}  // namespace

std::int64_t recomputed_stash_bytes(const Network& network, int first_layer, int last_layer, RecomputeMode mode) {
  switch (mode) {
    case RecomputeMode::selective: return network.layer_sum(first_layer, last_layer, &Layer::selective_stash_bytes);
    case RecomputeMode::blocks: return network.block_recompute_bytes(first_layer, last_layer);
    default: return 0;
  }
}

void declare_buffers(TaskGraph& g, const Network& net, RecomputeMode recompute) {
  add_optimizer_state(g, net);
  g.buffers.clear();
  add_weights(g, net);
  add_stashes(g, net, recompute);
  add_outputs(g);
}

}  // namespace pipetwin
