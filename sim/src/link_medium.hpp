// A link medium: one link, or every link of a shared group (a bus, a switch, the copy path of
// one GPU). Each link serves its transfers by its policy: an in-order link admits one transfer at
// a time, in its task order (the next when the previous has ended and its dependencies have);
// a shared link admits each transfer when its dependencies end. An admitted transfer first waits
// the link's latency, then needs cost - latency cycles of service at full bandwidth; transfers
// in service on the medium at the same time share its bandwidth equally (round-robin packet
// arbitration in the limit of small packets, so completion times are within one packet of
// packet-level round robin). Alone, a transfer takes exactly its cost.
#pragma once
#include <map>
#include <vector>

#include <systemc>

#include "fair_share.hpp"
#include "run_state.hpp"
#include "worker_pool.hpp"

namespace pipetwin::sim {

class LinkMedium final : public Steppable {
 public:
  LinkMedium(RunState& run, WorkerLease& lease);

  // Makes `link` an in-order link of this medium, serving `queue` (its task ids, in order).
  void serve_in_order(std::int32_t link, std::vector<std::int32_t> queue);
  void arrive(std::int32_t task);  // the transfer's dependencies have finished

 private:
  struct Waiting {
    std::int64_t enters_cycles;  // after the latency
    std::int32_t task;
  };
  struct InOrderLink {
    std::vector<std::int32_t> queue;  // task ids in the link's order
    std::size_t next = 0;             // the next to admit
    std::vector<char> arrived;        // per queue position: dependencies ended
    bool busy = false;                // a transfer of this link is admitted and not finished
  };
  void admit(std::int32_t task);      // starts it: latency, then service
  void admit_next(InOrderLink& link);
  void step() override;

  RunState& run_;
  std::vector<Waiting> waiting_;      // admitted, in their latency; in admission order
  std::map<std::int32_t, InOrderLink> in_order_;   // by link index
  std::map<std::int32_t, std::size_t> position_;   // task -> its position in its in-order link's queue
  FairShare bandwidth_;
  Worker& worker_;
};

}  // namespace pipetwin::sim
