// Elaboration of one run's module hierarchy from a task graph.
#include "platform.hpp"

#include <map>

namespace pipetwin::sim {

std::string module_name_for(const std::string& text) {
  std::string name = text.empty() ? std::string("unnamed") : text;
  for (auto& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!keep) c = '_';
  }
  return name;
}

Platform::Platform(const sc_core::sc_module_name& name, const TaskGraph& g, const KernelSession& session,
                   const AcceleratorRegistry& registry, const Network& network, const PacketSettings* packets)
    : sc_core::sc_module(name), queue_position_(g.tasks.size(), -1), in_order_slot_(g.tasks.size(), -1) {
  // Link media: a link of its own, or one per shared group.
  std::vector<std::int32_t> medium_of_link;
  std::map<std::string, std::int32_t> group_medium;
  for (const auto& link : g.links) {
    if (!link.shared_group.empty()) {
      const auto found = group_medium.find(link.shared_group);
      if (found != group_medium.end()) {
        medium_of_link.push_back(found->second);
        continue;
      }
      group_medium[link.shared_group] = static_cast<std::int32_t>(media_.size());
    }
    const std::string medium_name = module_name_for(link.shared_group.empty() ? link.name : link.shared_group);
    medium_of_link.push_back(static_cast<std::int32_t>(media_.size()));
    std::unique_ptr<LinkService> service;
    if (packets != nullptr) {
      service = std::make_unique<PacketService>(g, *packets, packet_network_);
    } else {
      service = std::make_unique<FluidService>(g);
    }
    media_.push_back(
        std::make_unique<LinkMediumModule>(medium_name.c_str(), queue_position_, in_order_slot_, std::move(service)));
  }
  board_ = std::make_unique<TaskBoard>("board", g, session, medium_of_link);
  if (packets != nullptr) plan_packets(g, *packets, medium_of_link);

  const auto queues = tasks_by_processor(g);
  std::map<std::int32_t, MemorySystemModule*> memory_of_system;
  for (std::size_t p = 0; p < queues.size(); ++p) {
    const AcceleratorSetup setup{g, network, static_cast<std::int32_t>(p), g.accelerator_settings};
    processors_.push_back(std::make_unique<ProcessorModule>(module_name_for(g.processors[p].name).c_str(), queues[p],
                                                            registry, setup));
    ProcessorModule& processor = *processors_.back();
    processor.board.bind(*board_);
    board_->processors.bind(processor.ready_in);
    const std::int32_t system = g.processors[p].memory_system;
    if (system < 0) continue;
    MemorySystemModule*& memory = memory_of_system[system];
    if (memory == nullptr) {
      const std::string memory_name = "memory_system_" + std::to_string(system);
      memory_systems_.push_back(std::make_unique<MemorySystemModule>(memory_name.c_str(), g.tasks.size()));
      memory = memory_systems_.back().get();
      memory->board.bind(*board_);
    }
    processor.memory.bind(memory->requests);
  }
  for (auto& medium : media_) {
    medium->board.bind(*board_);
    board_->media.bind(medium->ready_in);
  }
  const auto by_link = tasks_by_link(g);
  for (std::size_t k = 0; k < g.links.size(); ++k) {
    const std::int32_t slot =
        g.links[k].policy == LinkPolicy::in_order ? media_[medium_of_link[k]]->serve_in_order(by_link[k]) : -1;
    for (std::size_t i = 0; i < by_link[k].size(); ++i) {
      queue_position_[by_link[k][i]] = static_cast<std::int32_t>(i);
      in_order_slot_[by_link[k][i]] = slot;
    }
  }
  for (const auto& t : g.tasks) {  // transfers with nothing to wait for start at once
    if (t.placement == Placement::link && t.deps.empty()) media_[medium_of_link[t.resource]]->arrive_at_start(t.id);
  }
}

void Platform::plan_packets(const TaskGraph& g, const PacketSettings& settings,
                            const std::vector<std::int32_t>& medium_of_link) {
  packet_network_.credits.clear();
  for (const auto& link : g.links) packet_network_.credits.push_back(PacketService::credits_of(link, settings));
  // A next hop: a transfer (X, not an offload or reload, not a collective's step) whose one
  // dependency is a transfer of the same bytes on a link that ends where its own begins
  // (LinkTasks::transfer's routes); one next hop per transfer.
  packet_network_.follower.assign(g.tasks.size(), -1);
  packet_network_.released.assign(g.tasks.size(), -1);
  packet_network_.medium.assign(g.tasks.size(), nullptr);
  packet_network_.admitted.assign(g.tasks.size(), 0);
  std::vector<char> early(g.tasks.size(), 0);
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::X || t.deps.size() != 1 || t.collective >= 0) continue;
    const Task& before = g.tasks[t.deps[0].task];
    if (before.kind != TaskKind::X || before.collective >= 0 || before.bytes != t.bytes ||
        g.links[before.resource].dst != g.links[t.resource].src || packet_network_.follower[before.id] >= 0) {
      continue;
    }
    packet_network_.follower[before.id] = t.id;
    packet_network_.released[t.id] = 0;
    packet_network_.medium[t.id] = media_[medium_of_link[t.resource]].get();
    early[t.id] = 1;
  }
  board_->set_ready_early(std::move(early));
}

void Platform::add_traces(sc_core::sc_trace_file* file) {
  for (auto& processor : processors_) {
    processor->trace_busy();
    sc_core::sc_trace(file, processor->busy, processor->busy.name());
  }
  for (auto& medium : media_) {
    medium->trace_occupancy();
    sc_core::sc_trace(file, medium->in_service, medium->in_service.name());
  }
}

}  // namespace pipetwin::sim
