// How the CUDA executor maps the schedule's processors onto GPUs (docs/design.md, "Executors"):
//   partitions  SM partitions of one GPU through CUDA green contexts, `sms_per_partition` SMs
//               each (the driver API is reached at run time through the runtime, so binaries
//               never link libcuda); transfers on copy streams of the full device
//   gpus        one GPU per processor, transfers as peer copies
//   streams     plain streams on one GPU, no SM isolation (the labelled fallback)
// and builds one Lane per processor and per link. No CUDA header here.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lane.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::cuda {

struct PlacementOptions {
  std::string placement = "partitions";  // partitions | gpus | streams
  int device = 0;                        // partitions / streams: which GPU
  int sms_per_partition = 0;             // partitions: 0 = as many as P equal partitions allow
  bool tf32 = false;
  bool blocking_wait = false;            // host threads sleep while their streams work (Context)
  // partitions: split the GPU into max(P, split_into) partitions and run processor p on partition
  // first_partition + p (a profile's copies at once each take partitions of their own).
  int split_into = 0;
  int first_partition = 0;
};

class LaneSet {
 public:
  LaneSet(const TaskGraph& graph, const PlacementOptions& options, MemoryPool& pool);
  ~LaneSet();
  LaneSet(const LaneSet&) = delete;
  LaneSet& operator=(const LaneSet&) = delete;

  Lane& processor(std::int32_t p) { return *processors_.at(static_cast<std::size_t>(p)); }
  Lane& link(std::int32_t k) { return *links_.at(static_cast<std::size_t>(k)); }
  int device_of(std::int32_t processor) const;
  // Makes the lane's device (and green context) current in the calling thread.
  void enter(Lane& lane) const;
  // One line: what runs where ("4 SM partitions of 16 SMs on NVIDIA H100 80GB HBM3").
  const std::string& description() const { return description_; }
  static int caches_needed(const TaskGraph& graph) {
    return static_cast<int>(graph.processors.size() + graph.links.size());
  }

 private:
  struct Green;
  std::unique_ptr<Green> green_;
  std::vector<std::unique_ptr<Lane>> processors_, links_;
  std::string description_;
};

}  // namespace pipetwin::cuda
