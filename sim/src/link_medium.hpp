// A link medium: one link, or every link of a shared group (a bus, a switch, the copy path of
// one GPU). Each link admits its transfers by its policy: an in-order link one at a time, in its
// task order (the next when the previous has ended and its dependencies have); a shared link each
// transfer when its dependencies end. Admitted transfers are served by the medium's service
// (link_service.hpp): fluid (the default: latency, then an equal share of the bandwidth) or
// packet-level (packets round robin with credit-based flow control). One SC_METHOD process: it
// wakes at arrivals and at the service's next event.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "interfaces.hpp"
#include "link_service.hpp"

namespace pipetwin::sim {

class LinkMediumModule final : public sc_core::sc_module, public task_sink_if {
 public:
  sc_core::sc_port<task_board_if> board;
  sc_core::sc_export<task_sink_if> ready_in;
  sc_core::sc_signal<int> in_service;  // for VCD traces: transfers admitted and not finished

  SC_HAS_PROCESS(LinkMediumModule);
  // Per task (transfers; shared by all media): `queue_position`, its position in its link's task
  // order; `in_order_slot`, its link's index among its medium's in-order links, or -1.
  LinkMediumModule(const sc_core::sc_module_name& name, const std::vector<std::int32_t>& queue_position,
                   const std::vector<std::int32_t>& in_order_slot, std::unique_ptr<LinkService> service);
  const char* kind() const override { return "pipetwin::sim::LinkMediumModule"; }

  // Adds an in-order link of this medium, serving `queue` (its task ids, in order); returns its slot.
  std::int32_t serve_in_order(std::vector<std::int32_t> queue);
  void trace_occupancy() { traced_ = true; }
  // Transfers with no dependencies arrive when the simulation starts.
  void arrive_at_start(std::int32_t task) { initial_.push_back(task); }
  // Packet mode, cut-through: packets of the hop before `task` (a next hop this medium serves)
  // have arrived (`network.released` says how many); the first makes `task` ready.
  void packet_forwarded(std::int32_t task, PacketNetwork& network);

 private:
  struct InOrderLink {
    std::vector<std::int32_t> queue;  // task ids in the link's order
    std::size_t next = 0;             // the next to admit
    std::vector<char> arrived;        // per queue position: dependencies ended
    bool busy = false;                // a transfer of this link is admitted and not finished
    std::int64_t freed_cycles = -1;   // when its latest transfer's service ended
  };
  void task_ready(std::int32_t task) override;  // the transfer's dependencies have finished
  void admit(std::int32_t task, std::int64_t skipped_cycles);  // starts it: hands it to the service
  void admit_next(InOrderLink& link);
  const LinkInfo& link_of(std::int32_t task) const;  // the link a transfer is on
  void step();

  const std::vector<std::int32_t>& queue_position_;
  const std::vector<std::int32_t>& in_order_slot_;
  std::vector<InOrderLink> in_order_;  // by slot
  std::vector<std::int32_t> finished_;  // reused by each step
  std::vector<std::int32_t> initial_;
  // Served transfers whose reader's wake-up (LinkInfo::delivery_cycles) is still to come: (ends, task).
  std::vector<std::pair<std::int64_t, std::int32_t>> delivering_;
  std::unique_ptr<LinkService> service_;
  PacketService* packets_ = nullptr;  // service_, in packet mode
  bool traced_ = false;
  sc_core::sc_event wake_;
};

}  // namespace pipetwin::sim
