// Whether two task graphs are one program (same_program.hpp): tasks matched by where they run and
// in what order, then every field, dependency and buffer compared through that matching.
#include "pipetwin/schedule/same_program.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace pipetwin {
namespace {

// A task's place in its graph, the same in both graphs for matching tasks.
using Position = std::tuple<int, std::int32_t, std::int32_t>;  // placement, resource, order

Position position_of(const Task& t) { return {static_cast<int>(t.placement), t.resource, t.order}; }

// Per task id, its position; -1 (no task) stays as a position of its own.
std::vector<Position> positions(const TaskGraph& g) {
  std::vector<Position> out(g.tasks.size());
  for (const Task& t : g.tasks) out.at(static_cast<std::size_t>(t.id)) = position_of(t);
  return out;
}

Position position_or_none(const std::vector<Position>& at, std::int32_t id) {
  return id < 0 ? Position{-1, -1, -1} : at.at(static_cast<std::size_t>(id));
}

// A task's fields and dependencies, its ids replaced by positions.
auto task_key(const Task& t, const std::vector<Position>& at) {
  std::vector<std::tuple<Position, int, std::int64_t>> deps;
  for (const Dep& d : t.deps) deps.emplace_back(position_or_none(at, d.task), static_cast<int>(d.carries), d.bytes);
  std::sort(deps.begin(), deps.end());
  return std::make_tuple(static_cast<int>(t.kind), t.first_layer, t.last_layer, t.stage, t.minibatch, t.microbatch,
                         t.cost_cycles, t.memory_cycles, t.version_read, t.version_written, t.bytes, t.part, t.parts,
                         t.collective, deps);
}

// Every buffer, ids replaced by positions, in a canonical order.
auto buffer_keys(const TaskGraph& g, const std::vector<Position>& at) {
  std::vector<std::tuple<int, Position, std::int32_t, std::int32_t, std::int64_t, Position, std::vector<Position>>> keys;
  for (const Buffer& b : g.buffers) {
    std::vector<Position> freed;
    for (const std::int32_t id : b.freed_after) freed.push_back(position_or_none(at, id));
    std::sort(freed.begin(), freed.end());
    keys.emplace_back(static_cast<int>(b.name.kind), position_or_none(at, b.name.owner), b.name.stage, b.where, b.bytes,
                      position_or_none(at, b.allocated_by), std::move(freed));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool same_machine(const TaskGraph& a, const TaskGraph& b) {
  if (a.processors.size() != b.processors.size() || a.links.size() != b.links.size() ||
      a.stages.size() != b.stages.size() || a.tasks.size() != b.tasks.size() || a.buffers.size() != b.buffers.size()) {
    return false;
  }
  if (a.microbatches != b.microbatches || a.minibatches != b.minibatches ||
      a.samples_per_microbatch != b.samples_per_microbatch || a.clock_hz != b.clock_hz) {
    return false;
  }
  for (std::size_t i = 0; i < a.processors.size(); ++i) {
    const ProcessorInfo &p = a.processors[i], &q = b.processors[i];
    if (p.memory_capacity_bytes != q.memory_capacity_bytes || p.static_bytes != q.static_bytes ||
        p.memory_system != q.memory_system) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    const LinkInfo &l = a.links[i], &m = b.links[i];
    if (l.src != m.src || l.dst != m.dst || l.bytes_per_cycle != m.bytes_per_cycle || l.latency_cycles != m.latency_cycles ||
        l.shared_group != m.shared_group || l.policy != m.policy || l.switched != m.switched ||
        l.wake_cycles != m.wake_cycles || l.delivery_cycles != m.delivery_cycles) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const StageInfo &s = a.stages[i], &t = b.stages[i];
    if (s.first_layer != t.first_layer || s.last_layer != t.last_layer || s.processor != t.processor ||
        s.forward_processor != t.forward_processor || s.weight_delay != t.weight_delay) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool same_program(const TaskGraph& a, const TaskGraph& b) {
  if (!same_machine(a, b)) return false;
  const std::vector<Position> at_a = positions(a), at_b = positions(b);
  std::map<Position, const Task*> by_position;
  for (const Task& t : b.tasks) {
    if (!by_position.emplace(position_of(t), &t).second) return false;  // two tasks in one place: not comparable
  }
  for (const Task& t : a.tasks) {
    const auto it = by_position.find(position_of(t));
    if (it == by_position.end() || task_key(t, at_a) != task_key(*it->second, at_b)) return false;
  }
  return buffer_keys(a, at_a) == buffer_keys(b, at_b);
}

}  // namespace pipetwin
