// The weights' reuse distance on each processor, and what it costs a task against the table's
// timed order (weight_reuse.hpp).
#include "pipetwin/schedule/weight_reuse.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

bool touches_weights(TaskKind kind) {
  return kind == TaskKind::F || kind == TaskKind::RC || kind == TaskKind::B || kind == TaskKind::BA ||
         kind == TaskKind::BW || kind == TaskKind::U;
}

// A block of memory the model follows: a weight version of a layer, or a layer's gradient sum
// (`version`: which sum, counted per layer on its processor).
struct BlockKey {
  std::int32_t layer = 0;
  bool gradient = false;
  std::int32_t version = 0;
  bool operator<(const BlockKey& o) const {
    return std::tie(layer, gradient, version) < std::tie(o.layer, o.gradient, o.version);
  }
};

// One processor's LRU stack over blocks and the activations between them: each block's latest
// touch is an event holding its bytes (a Fenwick tree over the events sums them from any event
// on), so that a touch's working set is the bytes of the distinct blocks touched at or after the
// block's previous touch (its own and those touched in the same event included: an update reads
// its two blocks at once), and the activations passed since.
class ReuseStack {
 public:
  explicit ReuseStack(std::size_t most_events) : marked_(most_events + 1, 0) {}

  // Touches `key` of `bytes`, in a new event or in the latest one (`same_event`: read alongside
  // the block touched last); returns its working set (-1 on its first touch).
  std::int64_t touch(const BlockKey& key, std::int64_t bytes, bool same_event = false) {
    if (!same_event || events_ == 0) {
      if (events_ + 1 >= marked_.size()) throw Error("internal: weight reuse ran past its events");
      ++events_;
      activation_bytes_at_.resize(events_ + 1, activation_bytes_);
      activation_bytes_at_[events_] = activation_bytes_;
    }
    const std::size_t now = events_;
    std::int64_t working_set = -1;
    const auto it = latest_.find(key);
    if (it != latest_.end()) {
      const auto [since, since_bytes] = it->second;
      working_set = (marked_total_ - prefix(since - 1)) - since_bytes + bytes +
                    (activation_bytes_ - activation_bytes_at_[since]);
      add(since, -since_bytes);
    }
    add(now, bytes);
    latest_[key] = {now, bytes};
    return working_set;
  }
  // `from`'s memory is now `to`'s (the executor wrote `to` over it, or allocated `to` where `from`
  // was freed): `to` takes `from`'s latest touch, and `from` is gone.
  void rename(const BlockKey& from, const BlockKey& to) {
    const auto it = latest_.find(from);
    if (it == latest_.end()) return;
    const auto entry = it->second;
    latest_.erase(it);
    latest_[to] = entry;
  }
  // Data touched once (activations, gradients, stashes): it pushes the blocks down the stack.
  void pass(std::int64_t bytes) { activation_bytes_ += std::max<std::int64_t>(0, bytes); }

 private:
  void add(std::size_t event, std::int64_t bytes) {
    marked_total_ += bytes;
    for (std::size_t i = event; i < marked_.size(); i += i & (~i + 1)) marked_[i] += bytes;
  }
  std::int64_t prefix(std::size_t event) const {  // marked bytes at events 1..event
    std::int64_t sum = 0;
    for (std::size_t i = event; i > 0; i -= i & (~i + 1)) sum += marked_[i];
    return sum;
  }
  std::vector<std::int64_t> marked_;  // Fenwick tree over events 1..: the bytes of blocks whose latest touch is there
  std::int64_t marked_total_ = 0;
  std::size_t events_ = 0;
  std::map<BlockKey, std::pair<std::size_t, std::int64_t>> latest_;  // per block: its latest event, its bytes
  std::vector<std::int64_t> activation_bytes_at_{0};  // per event: activation bytes passed before it
  std::int64_t activation_bytes_ = 0;
};

// The reference the table holds for a block kind; -1 for none.
double table_reuse_s(const LayerTimes& times, WeightBlock block) {
  switch (block) {
    case WeightBlock::forward_weights: return times.forward_weights_reuse_s;
    case WeightBlock::backward_weights: return times.backward_weights_reuse_s;
    case WeightBlock::backward_gradient: return times.backward_gradient_reuse_s;
    case WeightBlock::update: return times.update_reuse_s;
  }
  return -1;
}

}  // namespace

std::vector<WeightTouch> weight_touches(const TaskGraph& graph, const Network& network) {
  std::map<std::int32_t, std::vector<const Task*>> by_processor;  // in order
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor || !touches_weights(t.kind) || t.first_layer < 0) continue;
    if (t.last_layer >= static_cast<std::int32_t>(network.size()) || t.last_layer < t.first_layer) {
      throw Error("weight reuse: " + task_label(t) + " runs layers " + std::to_string(t.first_layer) + ".." +
                  std::to_string(t.last_layer) + ", network " + network.name + " has " + std::to_string(network.size()));
    }
    by_processor[t.resource].push_back(&t);
  }
  std::vector<WeightTouch> touches;
  for (auto& [processor, tasks] : by_processor) {
    std::sort(tasks.begin(), tasks.end(), [](const Task* a, const Task* b) { return a->order < b->order; });
    // Per weight version of a layer: the position of the last task here that reads it.
    std::map<std::pair<std::int32_t, std::int32_t>, std::size_t> last_reader;
    std::size_t most_events = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = *tasks[i];
      most_events += 2 * static_cast<std::size_t>(t.last_layer - t.first_layer + 1);
      if (t.kind == TaskKind::BW) continue;  // reads no weights
      for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) last_reader[{l, std::max(0, t.version_read)}] = i;
    }
    ReuseStack stack(most_events);
    std::vector<std::int32_t> sum_of_layer(network.size(), 0);  // the gradient sum each layer adds into
    // Whether the layer's current sum has had its first backward (which writes it), and whether
    // its updates run here at all (where they do not, every backward writes a gradient of its own
    // and sends it: exec/common/graph_execution.hpp).
    std::vector<bool> sum_begun(network.size(), false), updated_here(network.size(), false);
    for (const Task* t : tasks) {
      if (t->kind != TaskKind::U) continue;
      for (std::int32_t l = t->first_layer; l <= t->last_layer; ++l) updated_here[static_cast<std::size_t>(l)] = true;
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task* t = tasks[i];
      const std::int32_t version = std::max(0, t->version_read);
      const std::int64_t samples =
          std::max<std::int64_t>(1, graph.samples_per_microbatch / std::max<std::int32_t>(1, t->parts));
      const auto weights_key = [&](std::int32_t l, std::int32_t v) { return BlockKey{l, false, v}; };
      const auto sum_key = [&](std::int32_t l) { return BlockKey{l, true, sum_of_layer[static_cast<std::size_t>(l)]}; };
      const auto touch = [&](std::int32_t l, WeightBlock block) {
        const std::int64_t bytes = network.layers[static_cast<std::size_t>(l)].param_bytes;
        if (bytes <= 0) return;
        const bool gradient = block == WeightBlock::backward_gradient;
        const std::int64_t working_set = stack.touch(gradient ? sum_key(l) : weights_key(l, version), bytes);
        const auto at = static_cast<std::size_t>(l);
        const bool written = gradient && (!sum_begun[at] || !updated_here[at]);
        if (gradient) sum_begun[at] = true;
        touches.push_back({t->id, l, block, bytes, working_set, written});
      };
      const bool forward = t->kind == TaskKind::F || t->kind == TaskKind::RC;
      const bool update = t->kind == TaskKind::U;
      // A forward or an update runs its layers first to last, a backward last to first.
      for (std::int32_t k = 0; k <= t->last_layer - t->first_layer; ++k) {
        const std::int32_t l = forward || update ? t->first_layer + k : t->last_layer - k;
        const Layer& layer = network.layers[static_cast<std::size_t>(l)];
        if (forward) {
          touch(l, WeightBlock::forward_weights);
          stack.pass(layer.output_bytes * samples);
        } else if (update) {
          const std::int64_t bytes = layer.param_bytes;
          if (bytes <= 0) continue;
          // The executor reads the gradient sum and the version it updates side by side and writes
          // the new version over the sum (exec/cpu/cpu_executor.cpp, sgd): the two are touched in
          // one event, the new version takes the sum's place, and the next sum the old version's
          // where nothing here reads that version again (the memory it frees), else none (memory
          // not touched before).
          const BlockKey sum = sum_key(l), old_weights = weights_key(l, version);
          touches.push_back({t->id, l, WeightBlock::update, bytes, stack.touch(sum, bytes)});
          touches.push_back({t->id, l, WeightBlock::update, bytes, stack.touch(old_weights, bytes, /*same_event=*/true)});
          stack.rename(sum, weights_key(l, t->version_written));
          ++sum_of_layer[static_cast<std::size_t>(l)];
          sum_begun[static_cast<std::size_t>(l)] = false;
          const auto reader = last_reader.find({l, version});
          if (reader == last_reader.end() || reader->second <= i) stack.rename(old_weights, sum_key(l));
        } else {
          const bool input_gradient = t->kind != TaskKind::BW && l > 0;  // nothing needs the network input's
          const bool weight_gradient = t->kind != TaskKind::BA;
          // The executor takes the weight gradient first, then the input gradient.
          if (weight_gradient) touch(l, WeightBlock::backward_gradient);
          if (input_gradient) touch(l, WeightBlock::backward_weights);
          stack.pass((input_gradient ? layer.input_bytes * samples : 0) + (weight_gradient ? layer.stash_bytes * samples : 0));
        }
      }
    }
  }
  return touches;
}

std::vector<LayerReuseSeconds> mean_reuse_seconds(const TaskGraph& graph, const Network& network,
                                                  const Calibration& calibration, std::int32_t skip_minibatches) {
  struct Sum {
    double seconds = 0;
    int count = 0;
  };
  std::vector<std::map<WeightBlock, Sum>> sums(network.size());
  for (const WeightTouch& touch : weight_touches(graph, network)) {
    if (graph.tasks[static_cast<std::size_t>(touch.task)].minibatch < skip_minibatches || touch.written) continue;
    Sum& sum = sums[static_cast<std::size_t>(touch.layer)][touch.block];
    sum.seconds += calibration.reuse_extra_s(touch.working_set_bytes, touch.bytes);
    ++sum.count;
  }
  std::vector<LayerReuseSeconds> means(network.size());
  for (std::size_t l = 0; l < network.size(); ++l) {
    const auto mean = [&](WeightBlock block) {
      const auto it = sums[l].find(block);
      return it == sums[l].end() || it->second.count == 0 ? -1.0 : it->second.seconds / it->second.count;
    };
    means[l] = {mean(WeightBlock::forward_weights), mean(WeightBlock::backward_weights),
                mean(WeightBlock::backward_gradient), mean(WeightBlock::update)};
  }
  return means;
}

void record_weight_reuse(Calibration& calibration, const TaskGraph& timed_graph, const Network& network,
                         std::int32_t skip_minibatches) {
  if (calibration.reuse_extra_s_per_byte.empty()) return;
  const std::vector<LayerReuseSeconds> means = mean_reuse_seconds(timed_graph, network, calibration, skip_minibatches);
  for (std::size_t l = 0; l < network.size(); ++l) {
    const auto it = calibration.layers.find(network.layers[l].name);
    if (it == calibration.layers.end()) continue;
    it->second.forward_weights_reuse_s = means[l].forward_weights_s;
    it->second.backward_weights_reuse_s = means[l].backward_weights_s;
    it->second.backward_gradient_reuse_s = means[l].backward_gradient_s;
    it->second.update_reuse_s = means[l].update_s;
  }
}

std::vector<double> weight_reuse_charge_s(const TaskGraph& graph, const Network& network, const Calibration& calibration) {
  std::vector<double> charge_s(graph.tasks.size(), 0.0);
  if (calibration.reuse_extra_s_per_byte.empty()) return charge_s;
  for (const WeightTouch& touch : weight_touches(graph, network)) {
    if (touch.written) continue;  // reads nothing: no price, and the table's means leave it out
    const auto it = calibration.layers.find(network.layers[static_cast<std::size_t>(touch.layer)].name);
    if (it == calibration.layers.end()) continue;
    const double table_s = table_reuse_s(it->second, touch.block);
    if (table_s < 0) continue;
    charge_s[static_cast<std::size_t>(touch.task)] += calibration.reuse_extra_s(touch.working_set_bytes, touch.bytes) - table_s;
  }
  return charge_s;
}

double weight_reuse_charge_per_minibatch_s(const TaskGraph& graph, const Network& network, const Calibration& calibration,
                                           std::int32_t from_minibatch, const std::function<bool(const Task&)>& counted) {
  const std::int32_t minibatches = graph.minibatches - std::max<std::int32_t>(0, from_minibatch);
  if (minibatches <= 0) return 0;
  const std::vector<double> charge_s = weight_reuse_charge_s(graph, network, calibration);
  double total_s = 0;
  for (const Task& t : graph.tasks) {
    if (t.minibatch >= from_minibatch && counted(t)) total_s += charge_s[static_cast<std::size_t>(t.id)];
  }
  return total_s / static_cast<double>(minibatches);
}

void charge_weight_reuse(TaskGraph& graph, const HardwareProfile& hardware, const Network& network) {
  if (!hardware.calibration || hardware.calibration->reuse_extra_s_per_byte.empty()) return;
  const std::vector<double> charge_s = weight_reuse_charge_s(graph, network, *hardware.calibration);
  for (auto& t : graph.tasks) {
    const double s = charge_s[static_cast<std::size_t>(t.id)];
    if (s == 0) continue;
    t.cost_cycles = std::max<std::int64_t>(0, t.cost_cycles + std::llround(s * graph.clock_hz));
    t.memory_cycles = std::min(t.memory_cycles, t.cost_cycles);
  }
}

}  // namespace pipetwin
