// Helpers shared by the schedule tests: graphs of uniform networks on unit hardware.
#pragma once
#include <string>
#include <vector>

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "pipetwin/schedule/result.hpp"
#include "pipetwin/schedule/task_graph.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "temporary_folder.hpp"

namespace pipetwin::test {

using pipetwin::graph_config;  // a configuration by its parts (registry.hpp)

// An MLP of `layers` equal dense layers (width 16): every layer costs the same on `unit`.
inline GraphConfig uniform_config(const std::string& schedule, int layers, int processors,
                                  int microbatches, int minibatches,
                                  std::vector<std::string> extra = {}) {
  GraphConfig config = graph_config("mlp", schedule, "unit", processors, microbatches, minibatches);
  std::string widths = "16";
  for (int l = 0; l < layers; ++l) widths += ",16";
  config.params = {"widths=" + widths, "batch=" + std::to_string(microbatches * 2)};
  config.params.insert(config.params.end(), extra.begin(), extra.end());
  return config;
}

// Adapts a configuration to what its schedule needs, as a user would: interleaved-1f1b wants M a
// multiple of P (and two chunks where the network has the cut points), pipedream-2bw M >= P,
// pipefb an even P;
// `torch-csv` gets 1f1b's order for the same configuration, exported to PyTorch's format (so
// every conformance test also round-trips that format).
inline GraphConfig with_schedule_file(GraphConfig config) {
  if (config.schedule == "pipefb") config.processors += config.processors % 2;  // two per stage
  const int P = config.processors;
  if (config.schedule == "interleaved-1f1b" || config.schedule == "pipedream-2bw") {
    config.microbatches = config.schedule == "pipedream-2bw" ? std::max(config.microbatches, P)
                                                             : P * ((config.microbatches + P - 1) / P);
    config.params.push_back("model.batch=" + std::to_string(8 * config.microbatches));
  }
  if (config.schedule == "interleaved-1f1b") {
    Params model_params;
    for (const auto& item : config.params) {
      if (item.rfind("widths=", 0) == 0) model_params.set("widths", item.substr(7));
    }
    const auto cuts = make_network(config.model, model_params).allowed_cuts().size();
    config.params.push_back(2 * static_cast<std::size_t>(P) <= cuts + 1 ? "chunks=2" : "chunks=1");
  }
  if (config.schedule != "torch-csv") return config;
  GraphConfig source = config;
  source.schedule = "1f1b";
  // In the test process's own temporary folder (never the checkout; removed at exit), one file
  // per configuration.
  const std::string path = process_temporary_folder().file(
      "conformance_" + std::to_string(config.processors) + "_" + std::to_string(config.microbatches) + ".csv");
  std::ofstream(path) << graph_to_torch_csv(make_graph(source));
  config.params.push_back("file=" + path);
  return config;
}

// The conformance configurations: every registered schedule on three networks of different
// shapes (convolutional with residual blocks, transformer, wide MLP), 4 microbatches x 2 steps.
inline GraphConfig conformance_config(const std::string& schedule, const std::string& model,
                                      const std::string& hardware, int processors) {
  GraphConfig config = graph_config(model, schedule, hardware, processors, 4, 2);
  if (model == "mlp") config.params = {"widths=784,512,512,512,512,512,512,512,512,512,10"};
  if (model == "gpt") config.params = {"layers=12", "seq=256", "batch=8"};
  return with_schedule_file(config);
}
// True when two transfers that take time were in service at once on one medium (a link, or a
// shared group of links): where bandwidth was shared, so the analytic evaluator may differ.
inline bool transfers_overlap_on_a_medium(const TaskGraph& g, const std::vector<TaskTiming>& times) {
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> by_medium;
  for (const auto& t : g.tasks) {
    if (t.placement != Placement::link || t.cost_cycles == 0) continue;
    const LinkInfo& link = g.links[static_cast<std::size_t>(t.resource)];
    by_medium[link.shared_group.empty() ? "link:" + link.name : "group:" + link.shared_group].push_back(
        {times[static_cast<std::size_t>(t.id)].start_cycles, times[static_cast<std::size_t>(t.id)].end_cycles});
  }
  for (auto& [medium, spans] : by_medium) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      if (spans[i].first < spans[i - 1].second) return true;
    }
  }
  return false;
}

inline const std::vector<std::string>& conformance_models() {
  static const std::vector<std::string> models = {"resnet56", "gpt", "mlp"};
  return models;
}

// The graph with only its buffers of one kind, and no static bytes: the memory that kind alone
// takes, for closed forms about it.
inline TaskGraph only_buffers(TaskGraph g, BufferKind kind) {
  std::vector<Buffer> kept;
  for (auto& b : g.buffers) {
    if (b.name.kind == kind) kept.push_back(std::move(b));
  }
  g.buffers = std::move(kept);
  for (auto& p : g.processors) p.static_bytes = 0;
  return g;
}

// The bytes of the first buffer of `kind` owned by task `owner` (0 when there is none).
inline std::int64_t buffer_bytes(const TaskGraph& g, BufferKind kind, std::int32_t owner) {
  for (const auto& b : g.buffers) {
    if (b.name.kind == kind && b.name.owner == owner) return b.bytes;
  }
  return 0;
}

}  // namespace pipetwin::test
