// Iteration bound by parametric Bellman-Ford; modulo placement with per-processor reservation
// tables (busy intervals on a circle of length T).
#include "pipetwin/schedule/modulo_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "pipetwin/models/error.hpp"

namespace pipetwin {
namespace {

// Busy intervals of one processor on the circle [0, T), sorted, non-overlapping.
class ReservationTable {
 public:
  explicit ReservationTable(std::int64_t period) : period_(period) {}

  // Earliest t >= earliest such that [t, t + cost) mod T is free, or -1 if none.
  std::int64_t earliest_fit(std::int64_t earliest, std::int64_t cost) const {
    if (cost == 0) return earliest;
    if (cost > period_) return -1;
    const std::int64_t base = earliest - floor_mod(earliest);
    std::int64_t at = floor_mod(earliest);  // candidate on the unrolled line [0, 2T)
    for (int lap = 0; lap < 2; ++lap) {
      for (const auto& [s, e] : busy_) {
        const std::int64_t start = s + lap * period_, end = e + lap * period_;
        if (end <= at) continue;
        if (start >= at + cost) return base + at;
        at = std::max(at, end);
        if (at >= floor_mod(earliest) + period_) return -1;
      }
    }
    // Past every interval and its first copy: free up to the first interval's second copy.
    const std::int64_t next_busy = busy_.empty() ? at + cost : busy_.front().first + 2 * period_;
    return at < floor_mod(earliest) + period_ && at + cost <= next_busy ? base + at : -1;
  }

  void reserve(std::int64_t start, std::int64_t cost) {
    if (cost == 0) return;
    const std::int64_t s = floor_mod(start);
    if (s + cost <= period_) {
      insert(s, s + cost);
    } else {
      insert(s, period_);
      insert(0, s + cost - period_);
    }
  }

 private:
  std::int64_t floor_mod(std::int64_t t) const { return ((t % period_) + period_) % period_; }
  void insert(std::int64_t s, std::int64_t e) {
    busy_.insert(std::upper_bound(busy_.begin(), busy_.end(), std::make_pair(s, e)), {s, e});
  }

  std::int64_t period_;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy_;
};

// A copy a sender's processor makes for a crossing edge: on `processor` from `start`.
struct SenderCopy {
  int processor = 0;
  std::int64_t start = 0;
  std::int64_t cycles = 0;
};

// Placement at period T; false if an edge cannot be met. A task may start up to `locality_slack`
// later than it could elsewhere to run where its inputs are. Copies its senders make (edges with
// sender_cycles) are reserved on their processors: those into the task after their source, and
// those out of it to tasks placed before it (edges back from a later iteration) after the task.
bool place(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
           std::int64_t period, std::int64_t locality_slack, bool preferred_only, ModuloSchedule& out) {
  const int n = static_cast<int>(tasks.size());
  std::vector<std::vector<const ModuloEdge*>> incoming(n), outgoing(n);
  for (const auto& e : edges) {
    incoming[e.to].push_back(&e);
    outgoing[e.from].push_back(&e);
  }
  std::vector<ReservationTable> tables(processors, ReservationTable(period));
  out.processor.assign(n, -1);
  out.start_cycles.assign(n, 0);
  for (int v = 0; v < n; ++v) {
    // Per processor: the earliest start there, the bytes that would have to come to it, and the
    // copies senders would make.
    std::vector<std::int64_t> starts(processors, -1), bytes_in(processors, 0);
    std::vector<std::vector<SenderCopy>> copies(processors);
    std::int64_t earliest_anywhere = std::numeric_limits<std::int64_t>::max();
    for (int p = 0; p < processors; ++p) {
      if (tasks[v].same_processor_as >= 0 && out.processor[tasks[v].same_processor_as] != p) continue;
      const auto& preferred = tasks[v].preferred_processors;
      if (preferred_only && !preferred.empty() && std::find(preferred.begin(), preferred.end(), p) == preferred.end()) {
        continue;
      }
      // The senders' tables as the copies into v would leave them (only those that copy).
      std::vector<std::pair<int, ReservationTable>> trial;
      const auto trial_table = [&](int q) -> ReservationTable& {
        for (auto& [processor, table] : trial) {
          if (processor == q) return table;
        }
        trial.emplace_back(q, tables[static_cast<std::size_t>(q)]);
        return trial.back().second;
      };
      bool fits = true;
      std::int64_t earliest = 0;
      for (const auto* e : incoming[v]) {
        if (e->from >= v) continue;  // a loop back from a later task: checked below
        const int q = out.processor[e->from];
        const bool cross = q != p;
        std::int64_t ready = out.start_cycles[e->from] + tasks[e->from].cost_cycles;
        if (cross && e->sender_cycles > 0) {
          ReservationTable& sender = trial_table(q);
          const std::int64_t copy_start = sender.earliest_fit(ready, e->sender_cycles);
          if (copy_start < 0) {
            fits = false;
            break;
          }
          sender.reserve(copy_start, e->sender_cycles);
          copies[p].push_back({q, copy_start, e->sender_cycles});
          ready = copy_start + e->sender_cycles;
        }
        earliest = std::max(earliest, ready + (cross ? e->cross_cycles : 0) - e->distance * period);
        if (cross) bytes_in[p] += e->cross_bytes;
      }
      if (!fits) continue;
      const ReservationTable& mine = tables[p];  // the copies into v are on other processors
      starts[p] = mine.earliest_fit(earliest, tasks[v].cost_cycles);
      if (starts[p] < 0) continue;
      // Copies out of v to tasks placed before it, on p after v.
      bool out_fits = true;
      std::vector<ReservationTable> after;
      for (const auto* e : outgoing[v]) {
        if (e->to >= v || e->sender_cycles <= 0 || out.processor[e->to] == p) continue;
        if (after.empty()) {
          after.push_back(mine);
          after.back().reserve(starts[p], tasks[v].cost_cycles);
        }
        const std::int64_t copy_start = after.back().earliest_fit(starts[p] + tasks[v].cost_cycles, e->sender_cycles);
        if (copy_start < 0) {
          out_fits = false;
          break;
        }
        after.back().reserve(copy_start, e->sender_cycles);
        copies[p].push_back({p, copy_start, e->sender_cycles});
      }
      if (!out_fits) {
        starts[p] = -1;
        continue;
      }
      earliest_anywhere = std::min(earliest_anywhere, starts[p]);
    }
    // Of the processors within `locality_slack` of the earliest start: fewest bytes moved, then
    // earliest, then lowest index.
    int best = -1;
    for (int p = 0; p < processors; ++p) {
      if (starts[p] < 0 || starts[p] > earliest_anywhere + locality_slack) continue;
      if (best < 0 || bytes_in[p] < bytes_in[best] || (bytes_in[p] == bytes_in[best] && starts[p] < starts[best])) {
        best = p;
      }
    }
    if (best < 0) return false;
    out.processor[v] = best;
    out.start_cycles[v] = starts[best];
    tables[best].reserve(starts[best], tasks[v].cost_cycles);
    for (const SenderCopy& copy : copies[best]) tables[static_cast<std::size_t>(copy.processor)].reserve(copy.start, copy.cycles);
  }
  out.period_cycles = period;
  return first_unmet_modulo_edge(out, tasks, edges) < 0;
}

}  // namespace

int first_unmet_modulo_edge(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                            const std::vector<ModuloEdge>& edges) {
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const ModuloEdge& e = edges[i];
    const bool cross = schedule.processor[e.from] != schedule.processor[e.to];
    if (schedule.start_cycles[e.to] + e.distance * schedule.period_cycles <
        schedule.start_cycles[e.from] + tasks[e.from].cost_cycles + (cross ? e.sender_cycles + e.cross_cycles : 0)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

double iteration_bound_cycles(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges) {
  const int n = static_cast<int>(tasks.size());
  // Is there a loop with cost - ratio x distance > 0? (longest paths still improving after n rounds)
  auto has_positive_loop = [&](double ratio) {
    std::vector<double> longest(n, 0.0);
    for (int round = 0; round <= n; ++round) {
      bool changed = false;
      for (const auto& e : edges) {
        const double w = static_cast<double>(tasks[e.from].cost_cycles) - ratio * e.distance;
        if (longest[e.from] + w > longest[e.to] + 1e-9 * (1 + std::abs(longest[e.to]))) {
          longest[e.to] = longest[e.from] + w;
          changed = true;
        }
      }
      if (!changed) return false;
    }
    return true;
  };
  double total = 0;
  for (const auto& t : tasks) total += static_cast<double>(t.cost_cycles);
  if (has_positive_loop(total + 1)) throw Error("modulo scheduler: a loop of dependencies within one iteration (deadlock)");
  if (!has_positive_loop(0)) return 0;
  double low = 0, high = total + 1;
  for (int i = 0; i < 100 && high - low > 1e-10 * std::max(1.0, high); ++i) {
    const double mid = (low + high) / 2;
    (has_positive_loop(mid) ? low : high) = mid;
  }
  return high;
}

ModuloSchedule modulo_lower_bounds(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                                   int processors) {
  if (processors < 1) throw Error("modulo scheduler: needs at least one processor");
  for (const auto& e : edges) {
    if (e.distance == 0 && e.from >= e.to) throw Error("modulo scheduler: tasks not in dependency order");
  }
  ModuloSchedule result;
  result.iteration_bound_cycles = iteration_bound_cycles(tasks, edges);
  std::int64_t total = 0, largest = 0;
  for (const auto& t : tasks) {
    total += t.cost_cycles;
    largest = std::max(largest, t.cost_cycles);
  }
  result.processor_bound_cycles = std::max(largest, (total + processors - 1) / processors);
  // The iteration bound is a ratio; a bisection error below 1e-6 cycles is not a cycle.
  const auto loop_bound = static_cast<std::int64_t>(std::ceil(result.iteration_bound_cycles - 1e-6));
  result.lower_bound_cycles = std::max<std::int64_t>({1, loop_bound, result.processor_bound_cycles});
  return result;
}

bool modulo_place_at(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
                     std::int64_t period_cycles, ModuloSchedule& out) {
  if (place(tasks, edges, processors, period_cycles, period_cycles / 2, true, out) ||
      place(tasks, edges, processors, period_cycles, 0, true, out) ||
      place(tasks, edges, processors, period_cycles, 0, false, out)) {
    out.period_cycles = period_cycles;
    return true;
  }
  return false;
}

ModuloSchedule modulo_schedule(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                               int processors) {
  ModuloSchedule result = modulo_lower_bounds(tasks, edges, processors);
  std::int64_t total = 0;
  for (const auto& t : tasks) total += t.cost_cycles;
  std::int64_t period = result.lower_bound_cycles;
  const std::int64_t give_up = 64 * period + total;
  for (; period <= give_up; period = std::max(period + 1, period + period / 500)) {
    if (modulo_place_at(tasks, edges, processors, period, result)) return result;
  }
  throw Error("modulo scheduler: no period up to " + std::to_string(give_up) + " cycles meets every dependency");
}

}  // namespace pipetwin
