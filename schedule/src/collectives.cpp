// All-reduce algorithms as X tasks over links (see collectives.hpp). A ring phase over n ranks
// sends, at step k, piece (i + offset - k) mod n from rank i to rank i + 1; the piece a rank sends
// at step k > 0 is the one it received at step k - 1 (reduced with its own, or, gathering, as
// received), so each step waits for the step into its rank and for the rank's previous send.
#include "collectives.hpp"

#include <algorithm>
#include <map>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {
namespace {

// `total` bytes in n pieces, the first (total mod n) one byte larger.
std::vector<std::int64_t> split_bytes(std::int64_t total, int n) {
  std::vector<std::int64_t> pieces(static_cast<std::size_t>(n), total / n);
  for (std::int64_t c = 0; c < total % n; ++c) ++pieces[static_cast<std::size_t>(c)];
  return pieces;
}

int piece_of(int rank, int step, int offset, int n) { return ((rank + offset - step) % n + n) % n; }

struct RingPhase {
  std::vector<std::vector<std::int32_t>> sent;  // [step][rank]: the X task
  int offset = 0;
  std::vector<std::int64_t> pieces;
  int n() const { return static_cast<int>(pieces.size()); }
  std::int32_t last_sent(int rank) const { return sent.back()[static_cast<std::size_t>(rank)]; }
  std::int32_t last_received(int rank) const { return sent.back()[static_cast<std::size_t>((rank + n() - 1) % n())]; }
  // What the last step into `rank` carried.
  std::int64_t last_received_bytes(int rank) const {
    const int from = (rank + n() - 1) % n();
    return pieces[static_cast<std::size_t>(piece_of(from, static_cast<int>(sent.size()) - 1, offset, n()))];
  }
};

class AllReduceBuilder {
 public:
  AllReduceBuilder(TaskGraph& g, LinkTasks& links, std::int32_t collective) : g_(g), links_(links), collective_(collective) {}

  // `steps` ring steps over `processors`; rank i's first step takes its data from start[i] (a
  // weight-gradient producer or an earlier step) and also waits for after[i].
  RingPhase ring(const std::vector<std::int32_t>& processors, std::vector<std::int64_t> pieces, int steps, int offset,
                 const std::vector<std::int32_t>& start, const std::vector<std::vector<Dep>>& after) {
    const int n = static_cast<int>(processors.size());
    RingPhase phase;
    phase.offset = offset;
    phase.pieces = std::move(pieces);
    for (int k = 0; k < steps; ++k) {
      std::vector<std::int32_t> sent(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        const auto at = static_cast<std::size_t>(i);
        const std::int64_t bytes = phase.pieces[static_cast<std::size_t>(piece_of(i, k, offset, n))];
        std::vector<Dep> deps;
        if (k == 0) {
          deps.push_back({start[at], Carries::weight_gradient, bytes});
          deps.insert(deps.end(), after[at].begin(), after[at].end());
        } else {
          deps.push_back({phase.sent.back()[static_cast<std::size_t>((i + n - 1) % n)], Carries::weight_gradient, bytes});
          deps.push_back({phase.sent.back()[at], Carries::order, 0});
        }
        const std::int32_t source = k == 0 ? start[at] : phase.sent.back()[at];
        const std::int32_t step = links_.link_task(source, TaskKind::X, one_hop(processors[at], processors[static_cast<std::size_t>((i + 1) % n)]),
                                                   bytes, std::move(deps));
        g_.tasks[static_cast<std::size_t>(step)].collective = collective_;
        sent[at] = step;
      }
      phase.sent.push_back(std::move(sent));
    }
    return phase;
  }

 private:
  std::int32_t one_hop(std::int32_t from, std::int32_t to) {
    const auto route = links_.route(from, to);
    if (route.size() != 1) {
      throw Error("a collective needs a direct link from p" + std::to_string(from) + " to p" + std::to_string(to) +
                  "; topology " + links_.hardware().topology + " has none (use fully-connected or switch)");
    }
    return route.front();
  }

  TaskGraph& g_;
  LinkTasks& links_;
  std::int32_t collective_;
};

}  // namespace

CollectiveAlgorithm collective_algorithm_from_string(const std::string& text) {
  if (text == "ring") return CollectiveAlgorithm::ring;
  if (text == "hierarchical") return CollectiveAlgorithm::hierarchical;
  throw Error(unknown_name_message("all-reduce algorithm", text, collective_algorithm_names()));
}

const char* to_string(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::ring ? "ring" : "hierarchical";
}

std::vector<std::string> collective_algorithm_names() { return {"ring", "hierarchical"}; }

std::int64_t all_reduce_steps(const ClusterSpec& cluster, CollectiveAlgorithm algorithm,
                              const std::vector<std::int32_t>& processors) {
  const auto n = static_cast<std::int64_t>(processors.size());
  if (n < 2) return 0;
  std::map<std::int32_t, std::int64_t> per_node;
  for (const auto p : processors) ++per_node[cluster.node_of(p)];
  const auto m = static_cast<std::int64_t>(per_node.size());
  const std::int64_t g = n / m;
  if (algorithm == CollectiveAlgorithm::ring || m == 1 || g == 1 || g * m != n) return n * 2 * (n - 1);
  return m * g * (g - 1) * 2 + g * m * 2 * (m - 1);  // inside the nodes twice, across them once
}

std::vector<std::vector<Dep>> add_all_reduce(TaskGraph& g, LinkTasks& links, const std::string& name,
                                             CollectiveAlgorithm algorithm, const std::vector<AllReduceRank>& ranks,
                                             std::int64_t bytes) {
  const int n = static_cast<int>(ranks.size());
  std::vector<std::vector<Dep>> done(ranks.size());
  if (n < 2) return done;
  std::vector<std::int32_t> processors, ready;
  for (const auto& r : ranks) {
    processors.push_back(r.processor);
    ready.push_back(r.ready_task);
  }
  // Nodes in order of first appearance, and each rank's node and place in it.
  const ClusterSpec& cluster = links.hardware().cluster;
  std::map<std::int32_t, std::vector<int>> members;  // node -> ranks
  std::vector<std::int32_t> node_order;
  for (int i = 0; i < n; ++i) {
    const std::int32_t node = cluster.node_of(processors[static_cast<std::size_t>(i)]);
    if (members.find(node) == members.end()) node_order.push_back(node);
    members[node].push_back(i);
  }
  const int nodes = static_cast<int>(node_order.size());
  const int per_node = n / nodes;
  bool even = n % nodes == 0;
  for (const auto& [node, list] : members) even = even && static_cast<int>(list.size()) == per_node;
  if (algorithm == CollectiveAlgorithm::hierarchical && !even) {
    throw Error(name + ": a hierarchical all-reduce needs the same number of ranks on every node");
  }
  const bool flat = algorithm == CollectiveAlgorithm::ring || nodes == 1 || per_node == 1;
  g.collectives.push_back({name, flat ? "ring" : "hierarchical", processors, bytes});
  AllReduceBuilder builder(g, links, static_cast<std::int32_t>(g.collectives.size() - 1));
  const std::vector<std::vector<Dep>> nothing(ranks.size());

  if (flat) {
    const RingPhase all = builder.ring(processors, split_bytes(bytes, n), 2 * (n - 1), 0, ready, nothing);
    for (int i = 0; i < n; ++i) {
      done[static_cast<std::size_t>(i)] = {{all.last_received(i), Carries::weight_gradient, all.last_received_bytes(i)},
                                           {all.last_sent(i), Carries::order, 0}};
    }
    return done;
  }
  // 1. Reduce-scatter in each node: place j ends with the node's sum of piece (j + 1) mod g.
    const std::vector<std::int64_t> node_pieces = split_bytes(bytes, per_node);
  std::vector<std::int32_t> scattered(ranks.size());  // per rank: the step that brought its piece
  for (const auto node : node_order) {
    const auto& list = members[node];
    std::vector<std::int32_t> procs, start;
    for (const int i : list) {
      procs.push_back(processors[static_cast<std::size_t>(i)]);
      start.push_back(ready[static_cast<std::size_t>(i)]);
    }
    const RingPhase phase = builder.ring(procs, node_pieces, per_node - 1, 0, start, std::vector<std::vector<Dep>>(list.size()));
    for (int j = 0; j < per_node; ++j) scattered[static_cast<std::size_t>(list[static_cast<std::size_t>(j)])] = phase.last_received(j);
  }
  // 2. All-reduce of each piece across the nodes: one ring per place in the node.
  std::vector<std::vector<Dep>> reduced(ranks.size());
  for (int j = 0; j < per_node; ++j) {
    std::vector<std::int32_t> procs, start;
    std::vector<int> rinper_noderanks;
    for (const auto node : node_order) {
      const int i = members[node][static_cast<std::size_t>(j)];
      rinper_noderanks.push_back(i);
      procs.push_back(processors[static_cast<std::size_t>(i)]);
      start.push_back(scattered[static_cast<std::size_t>(i)]);
    }
    const std::int64_t piece = node_pieces[static_cast<std::size_t>((j + 1) % per_node)];
    const RingPhase phase = builder.ring(procs, split_bytes(piece, nodes), 2 * (nodes - 1), 0, start,
                                         std::vector<std::vector<Dep>>(rinper_noderanks.size()));
    for (int t = 0; t < nodes; ++t) {
      reduced[static_cast<std::size_t>(rinper_noderanks[static_cast<std::size_t>(t)])] = {
          {phase.last_received(t), Carries::order, 0}, {phase.last_sent(t), Carries::order, 0}};
    }
  }
  // 3. All-gather in each node: place j starts from its reduced piece (j + 1) mod g.
  for (const auto node : node_order) {
    const auto& list = members[node];
    std::vector<std::int32_t> procs, start;
    std::vector<std::vector<Dep>> after;
    for (const int i : list) {
      procs.push_back(processors[static_cast<std::size_t>(i)]);
      start.push_back(scattered[static_cast<std::size_t>(i)]);
      after.push_back(reduced[static_cast<std::size_t>(i)]);
    }
    const RingPhase phase = builder.ring(procs, node_pieces, per_node - 1, 1, start, after);
    for (int j = 0; j < per_node; ++j) {
      done[static_cast<std::size_t>(list[static_cast<std::size_t>(j)])] = {
          {phase.last_received(j), Carries::weight_gradient, phase.last_received_bytes(j)},
          {phase.last_sent(j), Carries::order, 0}};
    }
  }
  return done;
}

}  // namespace pipetwin
