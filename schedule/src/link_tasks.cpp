// Links on first use, routes by topology, and the transfer and copy tasks placed on them.
#include "link_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/schedule/validator.hpp"

namespace pipetwin {

std::vector<std::pair<int, int>> LinkTasks::hops(int src, int dst) const {
  std::vector<std::pair<int, int>> result;
  const int processors = g_.processor_count();
  if (hw_.topology == "chain" || hw_.topology == "ring") {
    int step = dst > src ? 1 : -1;
    if (hw_.topology == "ring") {
      const int forward = ((dst - src) % processors + processors) % processors;
      step = forward <= processors - forward ? 1 : -1;
    }
    for (int at = src; at != dst;) {
      const int next = ((at + step) % processors + processors) % processors;
      result.emplace_back(at, next);
      at = next;
    }
  } else if (src != dst) {  // fully-connected or switch: one hop
    result.emplace_back(src, dst);
  }
  return result;
}

std::vector<std::int32_t> LinkTasks::route(int src, int dst) {
  std::vector<std::int32_t> links;
  const ClusterSpec& cluster = hw_.cluster;
  if (src != dst && cluster.node_of(src) != cluster.node_of(dst)) {
    // Between nodes: one hop through the sender's NIC, which all its links off the node share.
    const std::string nic = "nic:n" + std::to_string(cluster.node_of(src)) + "." + std::to_string(cluster.nic_of(src));
    links.push_back(add(src, dst, "p" + std::to_string(src) + "->p" + std::to_string(dst), cluster.nic, nic));
    return links;
  }
  for (const auto& [from, to] : hops(src, dst)) {
    std::string group;
    if (hw_.topology == "switch") {  // one switch per node
      group = hw_.link.name + (cluster.clustered() ? ":n" + std::to_string(cluster.node_of(from)) : "");
    } else if (hw_.link.shared) {
      group = hw_.link.name;
    }
    links.push_back(add(from, to, "p" + std::to_string(from) + "->p" + std::to_string(to), hw_.link, group));
    g_.links[static_cast<std::size_t>(links.back())].switched = hw_.topology == "switch";
  }
  return links;
}

std::int32_t LinkTasks::host_link(int p, bool to_host) {
  const std::string name = to_host ? "p" + std::to_string(p) + "->host" : "host->p" + std::to_string(p);
  const std::string group = hw_.host_link.shared ? hw_.host_link.name : "";
  return to_host ? add(p, kHost, name, hw_.host_link, group) : add(kHost, p, name, hw_.host_link, group);
}

std::int32_t LinkTasks::add(int src, int dst, const std::string& name, const LinkSpec& spec, const std::string& group) {
  const auto it = index_.find({src, dst});
  if (it != index_.end()) return it->second;
  LinkInfo info;
  info.name = name;
  info.src = src;
  info.dst = dst;
  info.bytes_per_cycle = link_bytes_per_cycle(hw_, spec);
  info.latency_cycles = hw_.cost_model == CostModelKind::unit ? 0 : link_latency_cycles(hw_, spec);
  if (hw_.cost_model != CostModelKind::unit) {
    const double hz = hw_.clock_hz();
    info.delivery_cycles = std::min(info.latency_cycles, static_cast<std::int64_t>(std::floor(spec.delivery_s * hz)));
    info.wake_cycles = std::min(info.latency_cycles - info.delivery_cycles, static_cast<std::int64_t>(std::floor(spec.wake_s * hz)));
  }
  info.shared_group = group;
  info.policy = spec.policy;
  g_.links.push_back(info);
  const auto id = static_cast<std::int32_t>(g_.links.size() - 1);
  specs_[id] = spec;
  index_[{src, dst}] = id;
  return id;
}

std::int32_t LinkTasks::link_task(std::int32_t from, TaskKind kind, std::int32_t link, std::int64_t bytes,
                                  std::vector<Dep> deps) {
  Task t;
  const Task& source = g_.tasks[from];
  t.id = static_cast<std::int32_t>(g_.tasks.size());
  t.kind = kind;
  t.first_layer = source.first_layer;
  t.last_layer = source.last_layer;
  t.stage = source.stage;
  t.minibatch = source.minibatch;
  t.microbatch = source.microbatch;
  t.part = source.part;
  t.parts = source.parts;
  t.placement = Placement::link;
  t.resource = link;
  link_order_.resize(g_.links.size(), 0);
  t.order = link_order_[link]++;
  t.bytes = bytes;
  t.cost_cycles = transfer_cycles(link, bytes);
  t.deps = std::move(deps);
  g_.tasks.push_back(std::move(t));
  return g_.tasks.back().id;
}

std::int64_t LinkTasks::transfer_cycles(std::int32_t link, std::int64_t bytes) const {
  return pipetwin::transfer_cycles(hw_, specs_.at(link), bytes);
}

Dep LinkTasks::transfer(std::int32_t source, int dst, Carries carries, std::int64_t bytes, int boundary_layer) {
  std::int32_t previous = source;
  for (const auto link : route(g_.tasks[source].resource, dst)) {
    previous = link_task(source, TaskKind::X, link, bytes, {Dep{previous, carries, bytes}});
    g_.tasks[previous].first_layer = g_.tasks[previous].last_layer = boundary_layer;
  }
  return Dep{previous, carries, bytes};
}

}  // namespace pipetwin

namespace pipetwin {

void order_links_by_earliest_start(TaskGraph& g) {
  const auto topological = execution_order(g, LinkOrders::ignore);  // deps and processor orders
  std::vector<std::int64_t> start(g.tasks.size(), 0), end(g.tasks.size(), 0);
  std::vector<std::int32_t> rank(g.tasks.size(), 0);
  std::vector<std::int64_t> processor_free(g.processors.size(), 0);
  const auto by_processor = tasks_by_processor(g);
  std::vector<std::int32_t> previous_on_processor(g.tasks.size(), -1);
  for (const auto& list : by_processor) {
    for (std::size_t i = 1; i < list.size(); ++i) previous_on_processor[list[i]] = list[i - 1];
  }
  for (std::size_t i = 0; i < topological.size(); ++i) {
    const Task& t = g.tasks[topological[i]];
    rank[t.id] = static_cast<std::int32_t>(i);
    std::int64_t at = 0;
    for (const auto& dep : t.deps) at = std::max(at, end[dep.task]);
    if (previous_on_processor[t.id] >= 0) at = std::max(at, end[previous_on_processor[t.id]]);
    start[t.id] = at;
    end[t.id] = at + t.cost_cycles;
  }
  std::vector<std::vector<std::int32_t>> on_link(g.links.size());
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::link) on_link[t.resource].push_back(t.id);
  }
  for (auto& list : on_link) {
    std::sort(list.begin(), list.end(), [&](std::int32_t a, std::int32_t b) {
      return std::make_pair(start[a], rank[a]) < std::make_pair(start[b], rank[b]);
    });
    for (std::size_t i = 0; i < list.size(); ++i) g.tasks[list[i]].order = static_cast<std::int32_t>(i);
  }
}

}  // namespace pipetwin
