// A rank's engine events (task starts and ends, allocations and frees of its own processors'
// memory and of host memory), kept to be sent to rank 0, where every rank's events are merged in
// time order and told to observers as if one process had run the whole graph (ranks.hpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "byte_codec.hpp"
#include "pipetwin/schedule/engine.hpp"

namespace pipetwin::exec {

class RankEventLog final : public EngineObserver {
 public:
  // `local[p]`: processor p's memory is this rank's (allocations elsewhere are other ranks' to tell).
  explicit RankEventLog(std::vector<bool> local) : local_(std::move(local)) {}

  void task_started(std::int32_t task, std::int64_t cycles) override { events_.push_back({Kind::started, task, cycles, {}}); }
  void task_ended(std::int32_t task, std::int64_t cycles) override { events_.push_back({Kind::ended, task, cycles, {}}); }
  void allocated(const MemoryChange& change) override { memory(Kind::allocated, change); }
  void freed(const MemoryChange& change) override { memory(Kind::freed, change); }

  void pack(ByteWriter& out) const { out.values(events_.data(), static_cast<std::int64_t>(events_.size())); }

  // Every rank's logs (as packed), merged by time (a rank's own events keep their order at equal
  // times) and told to `observers`.
  static void replay(std::vector<ByteReader*> logs, const std::vector<EngineObserver*>& observers) {
    std::vector<Event> all;
    for (ByteReader* log : logs) {
      const auto n = log->count<Event>();
      const auto at = all.size();
      all.resize(at + static_cast<std::size_t>(n));
      log->values(all.data() + at, n);
    }
    std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.cycles < b.cycles; });
    for (const Event& e : all) {
      for (EngineObserver* o : observers) {
        switch (e.kind) {
          case Kind::started: o->task_started(e.task, e.cycles); break;
          case Kind::ended: o->task_ended(e.task, e.cycles); break;
          case Kind::allocated: o->allocated(e.change); break;
          case Kind::freed: o->freed(e.change); break;
        }
      }
    }
  }

 private:
  enum class Kind : std::int32_t { started, ended, allocated, freed };
  struct Event {
    Kind kind;
    std::int32_t task;
    std::int64_t cycles;
    MemoryChange change;
  };
  void memory(Kind kind, const MemoryChange& change) {
    if (change.where >= 0 && !local_.at(static_cast<std::size_t>(change.where))) return;
    events_.push_back({kind, change.task, change.cycles, change});
  }
  std::vector<bool> local_;
  std::vector<Event> events_;
};

}  // namespace pipetwin::exec
