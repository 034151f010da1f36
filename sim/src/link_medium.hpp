// A link medium: one link, or every link of a shared group (a bus, a switch, the copy path of
// one GPU). A transfer first waits the link's latency, then needs cost - latency cycles of
// service at full bandwidth; transfers on the medium at the same time share its bandwidth
// equally (round-robin packet arbitration in the limit of small packets, so completion times are
// within one packet of packet-level round robin). Alone, a transfer takes exactly its cost.
#pragma once
#include <vector>

#include <systemc>

#include "fair_share.hpp"
#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class LinkMedium final : public Steppable {
 public:
  LinkMedium(RunState& run, WorkerLease& lease);

  void arrive(std::int32_t task);  // the transfer's dependencies have finished

 private:
  struct Waiting {
    std::int64_t enters_cycles;  // after the latency
    std::int32_t task;
  };
  void step() override;

  RunState& run_;
  std::vector<Waiting> waiting_;  // in arrival order
  FairShare bandwidth_;
  Worker& worker_;
};

}  // namespace pipetwin::sim
