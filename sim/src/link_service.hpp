// How a link medium serves the transfers it has admitted (docs/simulator.md, "Links"):
//  - FluidService (the default): a transfer waits its link's latency, then needs cost - latency
//    cycles of service; transfers in service at once share the medium equally (processor sharing,
//    the limit of small packets).
//  - PacketService: a transfer is cut into packets of at most packet_bytes; one packet at a time
//    is serialised onto the medium, round robin over the transfers with a packet to send and a
//    credit for their link; a packet arrives its link's latency after its serialisation ends, and
//    its credit returns one latency later (credit-based flow control: a link has `credits`
//    receive buffers). A transfer ends when its last packet has arrived.
// Alone on its medium with credits for the link's round trip, a transfer takes exactly its cost
// in both (latency + service); under contention their completion times differ by at most about
// one packet per transfer sharing the medium. A switched medium (LinkInfo::switched, topology
// "switch") has an input port per sender and an output port per receiver instead of one shared
// serialiser: each sender's packets go round robin through its input port, and wait in the
// receiver's output queue (first come, first served) for its output port, which starts a packet
// as soon as the packet has started arriving (virtual cut-through, equal port rates); so only
// transfers from one sender, or to one receiver, contend. In packet mode a route of several hops (the next
// hop's transfer depends only on this one and carries its bytes) is cut-through: the next hop is
// admitted when this hop's first packet arrives, and forwards each packet once it has arrived.
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "fair_share.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin::sim {

class LinkService {
 public:
  virtual ~LinkService() = default;
  // The transfer has been admitted (its dependencies ended, its link's policy let it in) at `now`.
  // `skipped_cycles` of its link's latency it does not wait here (fluid service: the medium
  // delivers it later, or its link's thread did not sleep; LinkInfo); the packet service takes 0.
  virtual void admit(std::int32_t task, std::int64_t now, std::int64_t skipped_cycles) = 0;
  // Serves everything up to `now`; `finished` gets the transfers that ended at or before it.
  virtual void advance(std::int64_t now, std::vector<std::int32_t>& finished) = 0;
  // When something next happens, or -1 when nothing will without a new admission.
  virtual std::int64_t next_event(std::int64_t now) const = 0;
  virtual int in_service() const = 0;  // admitted, not finished
};

class FluidService final : public LinkService {
 public:
  explicit FluidService(const TaskGraph& graph) : graph_(graph) {}
  void admit(std::int32_t task, std::int64_t now, std::int64_t skipped_cycles) override;
  void advance(std::int64_t now, std::vector<std::int32_t>& finished) override;
  std::int64_t next_event(std::int64_t now) const override;
  int in_service() const override { return admitted_; }

 private:
  struct Waiting {
    std::int64_t enters_cycles;  // after the latency
    std::int32_t task;
  };
  const TaskGraph& graph_;
  std::vector<Waiting> waiting_;  // in their latency, in admission order
  FairShare bandwidth_;
  int admitted_ = 0;
};

class LinkMediumModule;

// What the packet media of one run share (the Platform holds it): each link's receive buffers,
// and, per task, the cut-through between the hops of a route.
struct PacketNetwork {
  std::vector<std::int32_t> credits;       // per link: buffers free at its receiver
  std::vector<std::int32_t> follower;      // the next hop's transfer, which forwards this one's packets; -1: none
  std::vector<std::int64_t> released;      // a next hop's packets that have arrived at its sender; -1: not a next hop
  std::vector<LinkMediumModule*> medium;   // a next hop's medium
  std::vector<char> admitted;              // a next hop has been made ready (by its first packet)
};

// Packet mode's figures (SimOptions): packet size, and receive buffers per link (0: enough for the
// link's round trip, so that flow control never holds a lone transfer back).
struct PacketSettings {
  std::int64_t packet_bytes = 4096;
  std::int32_t credits = 0;
};

class PacketService final : public LinkService {
 public:
  // `network`: shared by every medium of the run.
  PacketService(const TaskGraph& graph, const PacketSettings& settings, PacketNetwork& network);
  // Next hops one of whose packets has arrived since the last call (their `released` counts are
  // up to date); the medium tells their media.
  std::vector<std::int32_t>& forwarded() { return forwarded_; }
  PacketNetwork& network() const { return network_; }
  void admit(std::int32_t task, std::int64_t now, std::int64_t skipped_cycles) override;
  void advance(std::int64_t now, std::vector<std::int32_t>& finished) override;
  std::int64_t next_event(std::int64_t now) const override;
  int in_service() const override { return static_cast<int>(flows_.size()); }

  // Receive buffers a link gets with `settings` (its own, or enough for its round trip).
  static std::int32_t credits_of(const LinkInfo& link, const PacketSettings& settings);

 private:
  struct Flow {
    std::int32_t task;
    std::int32_t link;
    std::int32_t input;           // its input port (0 on a bus: one serialiser)
    std::int32_t output;          // its output port on a switch; -1 on a bus
    std::int64_t bytes;           // payload (0: one empty packet)
    std::int64_t service_cycles;  // cost - latency: what all its packets' serialisation adds up to
    std::int64_t packets;
    std::int64_t sent = 0;
    std::int64_t arrived = 0;
  };
  struct Packet {
    std::int32_t task;
    std::int32_t link;
    std::int64_t cycles;       // its serialisation
    std::int64_t input_ends;   // when it has fully arrived at the switch
  };
  // A serialiser: a bus, or a switch's input or output port.
  struct Port {
    std::int32_t id = 0;                // the processor it belongs to (a switch), or 0 (a bus)
    bool busy = false;
    Packet packet{};                    // the one being sent
    std::int64_t until = 0;             // when it has been sent
    std::size_t next_flow = 0;          // input ports: round robin over flows_
    std::vector<Packet> queue;          // output ports: packets waiting, first come first served
  };
  struct Event {
    std::int64_t cycles;
    bool credit;          // a credit returns to `link`; else a packet of `task` arrives
    std::int32_t task;
    std::int32_t link;
    bool operator>(const Event& other) const { return cycles > other.cycles; }
  };
  std::int64_t packet_cycles(const Flow& flow, std::int64_t packet) const;  // serialisation of one
  Flow* flow_of(std::int32_t task);
  Port& port(std::vector<Port>& ports, std::int32_t id);
  void delivered(const Packet& packet, std::int64_t sent);  // its arrival and credit, scheduled
  bool start_input(Port& input, std::int64_t now);
  bool start_output(Port& output, std::int64_t now);

  const TaskGraph& graph_;
  PacketSettings settings_;
  PacketNetwork& network_;
  std::vector<std::int32_t> forwarded_;
  std::vector<Flow> flows_;                   // admitted, not finished, in admission order
  std::vector<Port> inputs_;                  // a bus's one serialiser, or a switch's input ports
  std::vector<Port> outputs_;                 // a switch's output ports
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
};

}  // namespace pipetwin::sim
