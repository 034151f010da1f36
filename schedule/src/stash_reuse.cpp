// Each processor's stash reuse distance from a task graph's order (stash_reuse.hpp).
#include "pipetwin/schedule/stash_reuse.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

bool forward_kind(TaskKind kind) { return kind == TaskKind::F || kind == TaskKind::RC; }
bool backward_kind(TaskKind kind) { return kind == TaskKind::B || kind == TaskKind::BA || kind == TaskKind::BW; }

// A layer's stash of one microbatch.
using StashKey = std::tuple<std::int32_t, std::int32_t, std::int32_t>;  // layer, minibatch, microbatch

}  // namespace

std::vector<StashReuse> stash_reuse(const TaskGraph& graph, const Network& network) {
  std::vector<const Task*> tasks;
  std::int32_t processors = 0;
  for (const Task& t : graph.tasks) {
    if (t.placement != Placement::processor || !(forward_kind(t.kind) || backward_kind(t.kind))) continue;
    if (t.first_layer < 0 || t.last_layer < t.first_layer || static_cast<std::size_t>(t.last_layer) >= network.size()) {
      throw Error("stash reuse: task " + std::to_string(t.id) + " runs layers " + std::to_string(t.first_layer) + "-" +
                  std::to_string(t.last_layer) + ", which network " + network.name + " (" +
                  std::to_string(network.size()) + " layers) lacks");
    }
    tasks.push_back(&t);
    processors = std::max(processors, t.resource + 1);
  }
  // Which processor stashed each layer's microbatch.
  std::map<StashKey, std::int32_t> written_on;
  for (const Task* t : tasks) {
    if (t->kind != TaskKind::F) continue;
    for (std::int32_t l = t->first_layer; l <= t->last_layer; ++l) written_on[{l, t->minibatch, t->microbatch}] = t->resource;
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task* a, const Task* b) {
    return a->resource != b->resource ? a->resource < b->resource : a->order < b->order;
  });
  std::vector<StashReuse> result(static_cast<std::size_t>(processors));
  std::size_t next = 0;
  for (std::int32_t p = 0; p < processors; ++p) {
    std::int64_t passed_bytes = 0;
    std::map<StashKey, std::int64_t> last_touch;  // the bytes passed when each stash was last touched
    double weighted = 0;
    StashReuse& mine = result[static_cast<std::size_t>(p)];
    for (; next < tasks.size() && tasks[next]->resource == p; ++next) {
      const Task& t = *tasks[next];
      const std::int64_t n = std::max<std::int64_t>(1, graph.samples_per_microbatch / std::max(1, t.parts));
      const bool forward = forward_kind(t.kind);
      // A forward goes first to last, a backward last to first.
      for (std::int32_t k = 0; k <= t.last_layer - t.first_layer; ++k) {
        const std::int32_t l = forward ? t.first_layer + k : t.last_layer - k;
        const Layer& layer = network.layers[static_cast<std::size_t>(l)];
        const std::int64_t stash = layer.stash_bytes * n, in_out = (layer.input_bytes + layer.output_bytes) * n;
        const StashKey key{l, t.minibatch, t.microbatch};
        if (!forward && t.minibatch >= 1) {
          const auto touched = last_touch.find(key);
          if (touched != last_touch.end()) {
            weighted += static_cast<double>(passed_bytes - touched->second) * static_cast<double>(stash);
            mine.read_back_bytes += stash;
          } else {
            const auto writer = written_on.find(key);
            if (writer != written_on.end() && writer->second != p) mine.remote_bytes += stash;
          }
        }
        passed_bytes += stash + in_out;
        last_touch[key] = passed_bytes;
      }
    }
    if (mine.read_back_bytes > 0) mine.distance_bytes = weighted / static_cast<double>(mine.read_back_bytes);
  }
  return result;
}

std::vector<std::vector<std::int32_t>> forward_layers_by_processor(const TaskGraph& graph) {
  std::vector<std::vector<std::int32_t>> layers;
  for (const Task& t : graph.tasks) {
    if (t.kind != TaskKind::F || t.placement != Placement::processor || t.minibatch != 0 || t.microbatch != 0) continue;
    if (static_cast<std::size_t>(t.resource) >= layers.size()) layers.resize(static_cast<std::size_t>(t.resource) + 1);
    for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) layers[static_cast<std::size_t>(t.resource)].push_back(l);
  }
  return layers;
}

}  // namespace pipetwin
