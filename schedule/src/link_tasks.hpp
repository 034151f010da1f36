// Links and the tasks that move data over them (X transfers between processors, OFF / ON copies
// to and from host memory), shared by the stage-pipeline builder and layerpipe's builder.
// Links are created on first use; routes follow the hardware profile's topology inside a node and
// go through the sender's NIC between nodes (ClusterSpec).
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

class LinkTasks {
 public:
  LinkTasks(TaskGraph& graph, const HardwareProfile& hw) : g_(graph), hw_(hw) {}

  const HardwareProfile& hardware() const { return hw_; }

  // Link indices, hop by hop, from processor `src` to `dst` (empty when they are equal).
  std::vector<std::int32_t> route(int src, int dst);
  // The link between processor `p` and host memory, in one direction (the profile's host link).
  std::int32_t host_link(int p, bool to_host);

  // The cycles `bytes` take on `link` (its latency, then its bandwidth).
  std::int64_t transfer_cycles(std::int32_t link, std::int64_t bytes) const;

  // A task on `link` moving `bytes` on behalf of compute task `from` (copies its stage,
  // minibatch, microbatch, layers and part), after `deps`; appended to the graph, its id returned.
  std::int32_t link_task(std::int32_t from, TaskKind kind, std::int32_t link, std::int64_t bytes,
                         std::vector<Dep> deps);

  // X transfers of `bytes` of what `carries` names, produced by task `source`, to processor
  // `dst`, hop by hop, labelled with `boundary_layer`. Returns the dependency its consumer takes:
  // on the last hop, or on `source` itself when that already runs on `dst`.
  Dep transfer(std::int32_t source, int dst, Carries carries, std::int64_t bytes, int boundary_layer);

 private:
  std::int32_t add(int src, int dst, const std::string& name, const LinkSpec& spec, const std::string& group);
  std::vector<std::pair<int, int>> hops(int src, int dst) const;

  TaskGraph& g_;
  const HardwareProfile& hw_;
  std::map<std::pair<int, int>, std::int32_t> index_;
  std::map<std::int32_t, LinkSpec> specs_;  // of the links this object made
  std::vector<std::int32_t> link_order_;
};

}  // namespace pipetwin

namespace pipetwin {

// Orders every link's tasks by their earliest start when links never make anything wait (ties by
// a topological order of dependencies and processor orders). The orders then follow one linear
// extension of the graph, so they cannot deadlock, whatever order the tasks were created in.
void order_links_by_earliest_start(TaskGraph& graph);

}  // namespace pipetwin
