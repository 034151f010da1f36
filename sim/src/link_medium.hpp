// A link medium: one link, or every link of a shared group (a bus, a switch, the memory system
// of one GPU). A transfer first waits the link's latency, then needs cost - latency cycles of
// service at full bandwidth; transfers on the medium at the same time share its bandwidth
// equally (round-robin packet arbitration in the limit of small packets, so completion times are
// within one packet of packet-level round robin). Alone, a transfer takes exactly its cost.
#pragma once
#include <vector>

#include <systemc>

#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class LinkMedium final : public Steppable {
 public:
  LinkMedium(RunState& run, WorkerLease& lease);
  LinkMedium(const LinkMedium&) = delete;
  LinkMedium& operator=(const LinkMedium&) = delete;
  ~LinkMedium() = default;

  void arrive(std::int32_t task);  // the transfer's dependencies have finished

 private:
  struct Waiting {
    std::int64_t enters_cycles;  // after the latency
    std::int32_t task;
  };
  struct Active {
    std::int32_t task;
    double remaining_cycles;     // service still needed at full bandwidth
  };
  void step() override;
  void advance(std::int64_t now);

  RunState& run_;
  std::vector<Waiting> waiting_;  // in arrival order; latencies differ only per link
  std::vector<Active> active_;
  std::int64_t last_update_ = 0;
  Worker& worker_;
};

}  // namespace pipetwin::sim
