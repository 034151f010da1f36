// Processor sharing: everything active on one resource (a link medium, a memory system) is
// served at an equal share of its full rate. Service is counted in cycles at the full rate; a
// job alone for its whole service finishes exactly that many cycles after it started.
#pragma once
#include <cstdint>
#include <vector>

namespace pipetwin::sim {

class FairShare {
 public:
  // Serves the active jobs from the last update to `now`.
  void advance(std::int64_t now);
  void add(std::int32_t job, std::int64_t service_cycles) {
    active_.push_back({job, static_cast<double>(service_cycles)});
  }
  // Jobs whose service is complete, in the order they were added; they leave. Replaces
  // `finished`'s contents (a buffer the caller reuses).
  void take_finished(std::vector<std::int32_t>& finished);
  // When the next job will finish at the current share, or -1 when nothing is active.
  std::int64_t next_completion(std::int64_t now) const;
  bool empty() const { return active_.empty(); }

 private:
  struct Job {
    std::int32_t id;
    double remaining_cycles;
  };
  std::vector<Job> active_;
  std::int64_t last_update_ = 0;
};

}  // namespace pipetwin::sim
