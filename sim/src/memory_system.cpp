// The shared memory system module's process.
#include "memory_system.hpp"

namespace pipetwin::sim {

MemorySystemModule::MemorySystemModule(const sc_core::sc_module_name& name, std::size_t tasks)
    : sc_core::sc_module(name), board("board"), requests("requests"), owner_(tasks, nullptr), wake_("wake") {
  requests.bind(*this);
  SC_METHOD(step);
  dont_initialize();
  sensitive << wake_;
}

void MemorySystemModule::begin(std::int32_t task, std::int64_t service_cycles, memory_client_if& client) {
  bandwidth_.advance(board->now_cycles());  // the others were served at the old share until now
  bandwidth_.add(task, service_cycles);
  owner_[task] = &client;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void MemorySystemModule::step() {
  const std::int64_t now = board->now_cycles();
  bandwidth_.advance(now);
  bandwidth_.take_finished(finished_);
  for (const auto task : finished_) owner_[task]->memory_served(task);
  const std::int64_t next = bandwidth_.next_completion(now);
  if (next >= 0) sc_core::next_trigger(board->cycles(next - now), wake_);
}

}  // namespace pipetwin::sim
