// The exact modulo scheduler: for a fixed period T, a mixed-integer program over processors and
// start cycles, solved by CBC; the least T is found by solving at T = lower bound, lower bound + 1,
// ... until one is feasible (each infeasible T proven, so the period is proven optimal). The
// formulation (docs/schedules/exact.md):
//   a[v][p] in {0,1}: task v on processor p; sum_p a[v][p] = 1; processors are interchangeable, so
//     they are labelled in order of first use: a[v][p] = 0 for p > v, and a[v][p] <= sum_{u<v}
//     a[u][p-1].
//   s[v] integer >= 0: start of task v in iteration 0 (iteration n starts it at s[v] + n T).
//   z[e] in {0,1}: edge e crosses processors, z[e] >= a[from][p] - a[to][p] for every p.
//   edge e: s[to] + distance T >= s[from] + cost[from] + cross_cycles z[e].
//   two tasks u, v with work: on the circle of length T their intervals [s, s + cost) are disjoint
//     iff (s[v] - s[u]) mod T lies in [cost[u], T - cost[v]]; with k[u][v] integer and same[u][v]
//     >= a[u][p] + a[v][p] - 1, cost[u] - M (1 - same) <= s[v] - s[u] + k T <= T - cost[v] +
//     M (1 - same), M = max(cost[u], cost[v]) (enough for a k to satisfy both when same = 0).
// Objectives, each solved after the one before is fixed: feasibility at the least T, then the
// bytes sum_e cross_bytes z[e], then sum_e held_bytes (s[to] + cost[to] - s[from]).
#include "pipetwin/schedule/exact_modulo_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <utility>
#include <string>

#include "pipetwin/models/error.hpp"

#ifdef PIPETWIN_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

namespace pipetwin {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }

#ifdef PIPETWIN_HAVE_CBC  // what the exact scheduler uses
// Shifts every start by a multiple of T to the least starts that keep the dependencies (residues
// and processors unchanged); false if no such starts exist (a positive loop).
bool least_starts(ModuloSchedule& s, const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges) {
  const std::int64_t T = s.period_cycles;
  const std::size_t n = tasks.size();
  std::vector<std::int64_t> residue(n), q(n, 0);
  for (std::size_t v = 0; v < n; ++v) residue[v] = floor_mod(s.start_cycles[v], T);
  // q[to] - q[from] >= ceil((cost + cross - distance T + r[from] - r[to]) / T)
  for (std::size_t round = 0; round <= n; ++round) {
    bool changed = false;
    for (const auto& e : edges) {
      const bool cross = s.processor[e.from] != s.processor[e.to];
      const std::int64_t need = tasks[e.from].cost_cycles + (cross ? e.cross_cycles : 0) - e.distance * T +
                                residue[e.from] - residue[e.to];
      const std::int64_t gap = -floor_div(-need, T);
      if (q[e.to] < q[e.from] + gap) {
        q[e.to] = q[e.from] + gap;
        changed = true;
      }
    }
    if (!changed) {
      for (std::size_t v = 0; v < n; ++v) s.start_cycles[v] = residue[v] + q[v] * T;
      return true;
    }
  }
  return false;
}

// The same schedule at a period `longer` >= its own: residues, processors and iteration offsets
// kept (starts r + q T'). It stays valid: a dependency's slack r[to] - r[from] + (q[to] - q[from] +
// distance) T grows with T because the factor of T cannot be negative when the slack at T was >= 0
// with residues below T, and intervals on the circle of T stay disjoint on the longer circle.
ModuloSchedule retimed(ModuloSchedule s, std::int64_t longer) {
  for (auto& start : s.start_cycles) {
    start = floor_mod(start, s.period_cycles) + floor_div(start, s.period_cycles) * longer;
  }
  s.period_cycles = longer;
  return s;
}
#endif

}  // namespace

namespace {

#ifdef PIPETWIN_HAVE_CBC  // the local search before CBC
// Greedy placement at `schedule`'s period with every task held to the processor `assignment`
// gives it (modulo_place_at with one preferred processor each); false if that fails.
bool place_assigned(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
                    const std::vector<int>& assignment, std::int64_t period, ModuloSchedule& out) {
  std::vector<ModuloTask> held = tasks;
  for (std::size_t v = 0; v < held.size(); ++v) held[v].preferred_processors = {assignment[v]};
  return modulo_place_at(held, edges, processors, period, out);
}

// Local search for fewer bytes at the schedule's period: merge all of one processor's tasks onto
// another, or move one task (with the tasks it must share a processor with) elsewhere; keep a
// move when greedy placement still fits and fewer bytes cross. Gives CBC a better start.
ModuloSchedule fewer_bytes(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
                           ModuloSchedule best) {
  const int n = static_cast<int>(tasks.size());
  std::vector<int> root(n);  // the first task of each same-processor group
  for (int v = 0; v < n; ++v) root[v] = tasks[v].same_processor_as >= 0 ? root[tasks[v].same_processor_as] : v;
  std::int64_t best_bytes = modulo_cross_bytes(best, edges);
  auto try_assignment = [&](const std::vector<int>& assignment) {
    ModuloSchedule candidate;
    if (!place_assigned(tasks, edges, processors, assignment, best.period_cycles, candidate)) return false;
    const std::int64_t bytes = modulo_cross_bytes(candidate, edges);
    if (bytes >= best_bytes) return false;
    best_bytes = bytes;
    candidate.iteration_bound_cycles = best.iteration_bound_cycles;
    best = std::move(candidate);
    return true;
  };
  for (int round = 0; round < 64 && best_bytes > 0; ++round) {
    bool improved = false;
    for (int from = 0; from < processors && !improved; ++from) {
      for (int to = 0; to < processors && !improved; ++to) {
        if (from == to) continue;
        std::vector<int> assignment = best.processor;
        for (auto& p : assignment) p = p == from ? to : p;
        improved = try_assignment(assignment);
      }
    }
    for (int v = 0; v < n && !improved; ++v) {
      if (root[v] != v) continue;
      for (int to = 0; to < processors && !improved; ++to) {
        if (to == best.processor[v]) continue;
        std::vector<int> assignment = best.processor;
        for (int u = 0; u < n; ++u) {
          if (root[u] == v) assignment[u] = to;
        }
        improved = try_assignment(assignment);
      }
    }
    if (!improved) break;
  }
  return best;
}
#endif

}  // namespace

std::int64_t modulo_cross_bytes(const ModuloSchedule& schedule, const std::vector<ModuloEdge>& edges) {
  std::int64_t bytes = 0;
  for (const auto& e : edges) {
    if (schedule.processor[e.from] != schedule.processor[e.to]) bytes += e.cross_bytes;
  }
  return bytes;
}

double modulo_held_byte_cycles(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                               const std::vector<ModuloEdge>& edges) {
  double total = 0;
  for (const auto& e : edges) {
    if (e.held_bytes == 0) continue;
    const std::int64_t end = schedule.start_cycles[e.to] + e.distance * schedule.period_cycles + tasks[e.to].cost_cycles;
    total += static_cast<double>(e.held_bytes) * static_cast<double>(end - schedule.start_cycles[e.from]);
  }
  return total;
}

void check_modulo_schedule(const ModuloSchedule& schedule, const std::vector<ModuloTask>& tasks,
                           const std::vector<ModuloEdge>& edges, int processors) {
  const std::int64_t T = schedule.period_cycles;
  if (T < 1) throw Error("modulo schedule: period " + std::to_string(T));
  if (schedule.processor.size() != tasks.size() || schedule.start_cycles.size() != tasks.size()) {
    throw Error("modulo schedule: needs a processor and a start per task");
  }
  std::vector<std::vector<int>> owner(processors);  // per processor: the task on each cycle mod T
  for (auto& o : owner) o.assign(static_cast<std::size_t>(T), -1);
  for (std::size_t v = 0; v < tasks.size(); ++v) {
    const int p = schedule.processor[v];
    if (p < 0 || p >= processors) throw Error("modulo schedule: task " + std::to_string(v) + " on no processor");
    if (tasks[v].same_processor_as >= 0 && schedule.processor[tasks[v].same_processor_as] != p) {
      throw Error("modulo schedule: task " + std::to_string(v) + " is not with its partner");
    }
    for (std::int64_t c = 0; c < tasks[v].cost_cycles; ++c) {
      int& slot = owner[p][static_cast<std::size_t>(floor_mod(schedule.start_cycles[v] + c, T))];
      if (slot >= 0) {
        throw Error("modulo schedule: tasks " + std::to_string(slot) + " and " + std::to_string(v) +
                    " overlap on processor " + std::to_string(p));
      }
      slot = static_cast<int>(v);
    }
  }
  const int unmet = first_unmet_modulo_edge(schedule, tasks, edges);
  if (unmet >= 0) {
    throw Error("modulo schedule: edge " + std::to_string(edges[unmet].from) + " -> " + std::to_string(edges[unmet].to) +
                " is not met");
  }
}

#ifndef PIPETWIN_HAVE_CBC

bool exact_scheduler_available() { return false; }

ExactModuloResult exact_modulo_schedule(const std::vector<ModuloTask>&, const std::vector<ModuloEdge>&, int,
                                        const ExactModuloOptions&) {
  throw Error("the exact scheduler needs CBC: this pipetwin was built without it (install coinor-libcbc-dev and rebuild)");
}

#else

bool exact_scheduler_available() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};

enum class Goal { feasible, bytes, memory };

// The program at one period, its columns named by role.
class PeriodProgram {
 public:
  PeriodProgram(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges, int processors,
                std::int64_t period)
      : tasks_(tasks), edges_(edges), P_(processors), T_(period) {
    const int n = static_cast<int>(tasks.size());
    std::int64_t largest = 0, largest_cross = 0;
    for (const auto& t : tasks) largest = std::max(largest, t.cost_cycles);
    for (const auto& e : edges) largest_cross = std::max(largest_cross, e.cross_cycles);
    // The least starts (least_starts) lie below n (2 + (largest + largest_cross) / T) periods.
    horizon_ = T_ * (static_cast<std::int64_t>(n) * (2 + (largest + largest_cross + T_ - 1) / T_) + 1);
    const double laps = static_cast<double>(horizon_ / T_ + 2);
    for (int v = 0; v < n; ++v) start_.push_back(column(0, static_cast<double>(horizon_), true));
    assign_.assign(n, std::vector<int>(P_, -1));
    for (int v = 0; v < n; ++v) {
      std::vector<std::pair<int, double>> one;
      for (int p = 0; p < P_; ++p) {
        assign_[v][p] = column(0, p <= v ? 1 : 0, true);
        one.emplace_back(assign_[v][p], 1.0);
      }
      row(one, 'E', 1);
      if (tasks[v].same_processor_as >= 0) {
        for (int p = 0; p < P_; ++p) row({{assign_[v][p], 1.0}, {assign_[tasks[v].same_processor_as][p], -1.0}}, 'E', 0);
      }
      // Labels in order of first use: v may open processor p only if an earlier task is on p - 1.
      for (int p = 1; p <= std::min(v, P_ - 1); ++p) {
        std::vector<std::pair<int, double>> opened{{assign_[v][p], 1.0}};
        for (int u = 0; u < v; ++u) opened.emplace_back(assign_[u][p - 1], -1.0);
        row(opened, 'L', 0);
      }
    }
    cross_.assign(edges.size(), -1);
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const ModuloEdge& e = edges[i];
      const double need = static_cast<double>(tasks[e.from].cost_cycles - e.distance * T_);
      if (e.from == e.to) {
        if (need > 0) infeasible_ = true;  // a task's own loop is longer than its distance allows
        continue;
      }
      std::vector<std::pair<int, double>> dep{{start_[e.to], 1.0}, {start_[e.from], -1.0}};
      if (e.cross_cycles > 0 || e.cross_bytes > 0) {
        cross_[i] = column(0, 1, true);
        for (int p = 0; p < P_; ++p) row({{cross_[i], 1.0}, {assign_[e.from][p], -1.0}, {assign_[e.to][p], 1.0}}, 'G', 0);
        if (e.cross_cycles > 0) dep.emplace_back(cross_[i], -static_cast<double>(e.cross_cycles));
      }
      row(dep, 'G', need);
    }
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        const std::int64_t cu = tasks[u].cost_cycles, cv = tasks[v].cost_cycles;
        if (cu == 0 || cv == 0) continue;
        if (cu + cv > T_) {  // cannot share a processor
          for (int p = 0; p < P_; ++p) row({{assign_[u][p], 1.0}, {assign_[v][p], 1.0}}, 'L', 1);
          continue;
        }
        const int same = column(0, 1, true);
        const int k = column(-laps, laps, true);
        for (int p = 0; p < P_; ++p) row({{same, 1.0}, {assign_[u][p], -1.0}, {assign_[v][p], -1.0}}, 'G', -1);
        const double M = static_cast<double>(std::max(cu, cv));
        const double Td = static_cast<double>(T_);
        row({{start_[v], 1.0}, {start_[u], -1.0}, {k, Td}, {same, -M}}, 'G', static_cast<double>(cu) - M);
        row({{start_[v], 1.0}, {start_[u], -1.0}, {k, Td}, {same, M}}, 'L', Td - static_cast<double>(cv) + M);
        pairs_.push_back({u, v, same, k});
      }
    }
  }

  std::size_t rows() const { return row_lower_.size(); }

  void set_goal(Goal goal, double bytes_at_most) {
    if (goal == Goal::bytes || goal == Goal::memory) {
      std::vector<std::pair<int, double>> bytes;
      for (std::size_t i = 0; i < edges_.size(); ++i) {
        if (cross_[i] >= 0 && edges_[i].cross_bytes > 0) bytes.emplace_back(cross_[i], static_cast<double>(edges_[i].cross_bytes));
      }
      if (goal == Goal::bytes) {
        for (const auto& [c, w] : bytes) objective_[c] += w;
      } else if (!bytes.empty()) {
        row(bytes, 'L', bytes_at_most);
      }
    }
    if (goal == Goal::memory) {
      for (const auto& e : edges_) {
        if (e.held_bytes == 0) continue;
        const double w = static_cast<double>(e.held_bytes);
        objective_[start_[e.to]] += w;
        objective_[start_[e.from]] -= w;
      }
    }
  }

  // A starting solution from a schedule at this period (its processors relabelled in order of
  // first use, its starts the least ones).
  void start_from(ModuloSchedule s) {
    if (s.period_cycles > T_) return;
    if (s.period_cycles < T_) s = retimed(std::move(s), T_);
    if (!least_starts(s, tasks_, edges_)) return;
    const int n = static_cast<int>(tasks_.size());
    std::vector<int> label(P_, -1);
    int used = 0;
    for (int v = 0; v < n; ++v) {
      int& l = label[s.processor[v]];
      if (l < 0) l = used++;
      s.processor[v] = l;
    }
    std::vector<double> value(lower_.size(), 0.0);
    for (int v = 0; v < n; ++v) {
      if (s.start_cycles[v] > horizon_) return;
      value[start_[v]] = static_cast<double>(s.start_cycles[v]);
      value[assign_[v][s.processor[v]]] = 1;
    }
    for (std::size_t i = 0; i < edges_.size(); ++i) {
      if (cross_[i] >= 0) value[cross_[i]] = s.processor[edges_[i].from] != s.processor[edges_[i].to] ? 1 : 0;
    }
    for (const auto& pair : pairs_) {
      const bool same = s.processor[pair.u] == s.processor[pair.v];
      const std::int64_t d = s.start_cycles[pair.v] - s.start_cycles[pair.u];
      // k puts d + k T in [cost u, T - cost v] on one processor, in [0, T) otherwise.
      const std::int64_t low = same ? tasks_[pair.u].cost_cycles : 0;
      value[pair.same] = same ? 1 : 0;
      value[pair.k] = static_cast<double>(-floor_div(d - low, T_));
    }
    start_values_ = std::move(value);
  }

  struct Outcome {
    bool found = false, optimal = false, infeasible = false;
    double objective = 0, bound = 0;
    ModuloSchedule schedule;
  };

  Outcome solve(double seconds, int max_nodes) {
    Outcome out;
    if (infeasible_) {
      out.infeasible = out.optimal = true;
      return out;
    }
    const std::unique_ptr<Cbc_Model, CbcDeleter> model = load();
    Cbc_Model* m = model.get();
    Cbc_setLogLevel(m, 0);
    Cbc_setMaximumSeconds(m, std::max(0.05, seconds));
    Cbc_setAllowableGap(m, 1e-6);
    Cbc_setAllowableFractionGap(m, 0);
    Cbc_setParameter(m, "threads", "1");
    if (max_nodes > 0) Cbc_setMaximumNodes(m, max_nodes);
    Cbc_solve(m);
    out.infeasible = Cbc_isProvenInfeasible(m) != 0;
    const double* x = Cbc_bestSolution(m);
    if (x != nullptr && !out.infeasible) {
      out.found = true;
      out.optimal = Cbc_isProvenOptimal(m) != 0;
      out.objective = Cbc_getObjValue(m);
      out.bound = out.optimal ? out.objective : Cbc_getBestPossibleObjValue(m);
      const int n = static_cast<int>(tasks_.size());
      out.schedule.period_cycles = T_;
      out.schedule.processor.assign(n, 0);
      out.schedule.start_cycles.assign(n, 0);
      for (int v = 0; v < n; ++v) {
        out.schedule.start_cycles[v] = std::llround(x[start_[v]]);
        for (int p = 0; p < P_; ++p) {
          if (x[assign_[v][p]] > 0.5) out.schedule.processor[v] = p;
        }
      }
    }
    return out;
  }

 private:
  struct Pair { int u, v, same, k; };

  int column(double lower, double upper, bool integer) {
    lower_.push_back(lower);
    upper_.push_back(upper);
    integer_.push_back(integer);
    return static_cast<int>(lower_.size()) - 1;
  }
  void row(const std::vector<std::pair<int, double>>& terms, char sense, double rhs) {
    const int r = static_cast<int>(row_lower_.size());
    for (const auto& [c, w] : terms) triplets_.push_back({c, r, w});
    row_lower_.push_back(sense == 'L' ? -std::numeric_limits<double>::max() : rhs);
    row_upper_.push_back(sense == 'G' ? std::numeric_limits<double>::max() : rhs);
  }

  // The program as one CBC model, loaded at once (CBC's row-by-row calls copy the matrix each time),
  // with the MIP start if there is one (CBC matches it to columns by name).
  std::unique_ptr<Cbc_Model, CbcDeleter> load() const {
    std::unique_ptr<Cbc_Model, CbcDeleter> model(Cbc_newModel());
    const int columns = static_cast<int>(lower_.size());
    std::vector<Triplet> sorted = triplets_;
    std::sort(sorted.begin(), sorted.end(), [](const Triplet& a, const Triplet& b) {
      return a.column != b.column ? a.column < b.column : a.row < b.row;
    });
    std::vector<CoinBigIndex> starts(static_cast<std::size_t>(columns) + 1, 0);
    std::vector<int> rows;
    std::vector<double> values, objective(static_cast<std::size_t>(columns), 0.0);
    for (const auto& t : sorted) {
      ++starts[static_cast<std::size_t>(t.column) + 1];
      rows.push_back(t.row);
      values.push_back(t.value);
    }
    for (int c = 0; c < columns; ++c) starts[c + 1] += starts[c];
    for (const auto& [c, w] : objective_) objective[c] = w;
    Cbc_loadProblem(model.get(), columns, static_cast<int>(row_lower_.size()), starts.data(), rows.data(), values.data(),
                    lower_.data(), upper_.data(), objective.data(), row_lower_.data(), row_upper_.data());
    for (int c = 0; c < columns; ++c) {
      if (integer_[c]) Cbc_setInteger(model.get(), c);
      if (!start_values_.empty()) Cbc_setColName(model.get(), c, ("x" + std::to_string(c)).c_str());
    }
    if (!start_values_.empty()) {
      std::vector<int> index(start_values_.size());
      for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
      Cbc_setMIPStartI(model.get(), columns, index.data(), start_values_.data());
    }
    return model;
  }

  const std::vector<ModuloTask>& tasks_;
  const std::vector<ModuloEdge>& edges_;
  int P_;
  std::int64_t T_;
  std::int64_t horizon_ = 0;
  bool infeasible_ = false;
  struct Triplet { int column, row; double value; };
  std::vector<double> lower_, upper_, row_lower_, row_upper_, start_values_;
  std::vector<bool> integer_;
  std::vector<Triplet> triplets_;
  std::vector<int> start_;
  std::vector<std::vector<int>> assign_;
  std::vector<int> cross_;
  std::vector<Pair> pairs_;
  std::map<int, double> objective_;
};

}  // namespace

ExactModuloResult exact_modulo_schedule(const std::vector<ModuloTask>& tasks, const std::vector<ModuloEdge>& edges,
                                        int processors, const ExactModuloOptions& options) {
  const auto begin = Clock::now();
  auto left_s = [&] { return options.time_limit_s - std::chrono::duration<double>(Clock::now() - begin).count(); };
  ExactModuloResult result;
  const ModuloSchedule bounds = modulo_lower_bounds(tasks, edges, processors);
  ModuloSchedule heuristic;
  bool have_heuristic = false;
  try {
    heuristic = modulo_schedule(tasks, edges, processors);
    have_heuristic = true;
    result.heuristic_period_cycles = heuristic.period_cycles;
    result.heuristic_bytes = modulo_cross_bytes(heuristic, edges);
  } catch (const Error&) {
  }
  if (options.period_cycles < 0) throw Error("exact scheduler: period must be positive");
  result.period_proven_lower_cycles = bounds.lower_bound_cycles;
  if (options.period_cycles > 0 && options.period_cycles < bounds.lower_bound_cycles) {
    throw Error("exact scheduler: no schedule has a period of " + std::to_string(options.period_cycles) +
                " cycles (the lower bound is " + std::to_string(bounds.lower_bound_cycles) + ")");
  }

  // The least feasible period: every smaller one proven infeasible, from the lower bound up, or
  // the heuristic's when time runs out first.
  PeriodProgram::Outcome found;
  ModuloSchedule local_search;  // the start given to the solve that found the schedule
  std::int64_t period = options.period_cycles > 0 ? options.period_cycles : bounds.lower_bound_cycles;
  const std::int64_t stop = options.period_cycles > 0 ? period : (have_heuristic ? heuristic.period_cycles : period + 64);
  for (; period <= stop; ++period) {
    if (result.solves == 0 || left_s() > 0) {
      PeriodProgram program(tasks, edges, processors, period);
      // Start from the greedy schedule at this period, or from the greedy's own (shorter) period
      // retimed to this one, whichever moves fewer bytes.
      ModuloSchedule hint;
      bool placed = have_heuristic && heuristic.period_cycles == period
                        ? (hint = heuristic, true)  // placed already, by modulo_schedule
                        : modulo_place_at(tasks, edges, processors, period, hint);
      if (have_heuristic && heuristic.period_cycles < period &&
          (!placed || modulo_cross_bytes(heuristic, edges) < modulo_cross_bytes(hint, edges))) {
        hint = retimed(heuristic, period);
        placed = true;
      }
      if (placed && options.minimise_bytes) hint = fewer_bytes(tasks, edges, processors, hint);
      if (placed) {
        program.start_from(hint);
        local_search = hint;
      }
      program.set_goal(options.minimise_bytes ? Goal::bytes : Goal::feasible, 0);
      result.program_rows = program.rows();
      if (program.rows() > options.max_rows) {
        result.too_large = true;
        found = {};  // neither found nor proven infeasible: the fallback below
      } else {
        found = program.solve(left_s(), options.max_nodes);
        ++result.solves;
        if (found.found) break;
      }
    } else {
      found.infeasible = false;
    }
    if (!found.infeasible) {  // out of time or nodes: the heuristic's schedule, if any, with the gap
      result.time_limit_reached = !result.too_large;
      const std::int64_t fallback = options.period_cycles > 0 ? period : heuristic.period_cycles;
      if (!have_heuristic || heuristic.period_cycles > fallback) {
        throw Error("exact scheduler: no schedule found at " + std::to_string(period) + " cycles within the limits (" +
                    (result.too_large ? "the program has " + std::to_string(result.program_rows) + " rows, over " +
                                            std::to_string(options.max_rows)
                                      : std::to_string(options.time_limit_s) + " s, " +
                                            std::to_string(options.max_nodes) + " nodes") + ")");
      }
      period = fallback;
      found.schedule = local_search.period_cycles == period ? local_search
                       : heuristic.period_cycles < period   ? retimed(heuristic, period)
                                                            : heuristic;
      found.found = true;
      found.optimal = false;
      found.bound = 0;
      break;
    }
    if (options.period_cycles > 0) throw Error("exact scheduler: no schedule has a period of " + std::to_string(period) + " cycles (proven)");
    result.period_proven_lower_cycles = period + 1;
  }
  if (!found.found) throw Error("exact scheduler: no period up to " + std::to_string(stop) + " cycles was feasible");
  result.schedule = found.schedule;
  if (options.minimise_bytes && local_search.period_cycles == period &&
      modulo_cross_bytes(local_search, edges) < modulo_cross_bytes(found.schedule, edges)) {
    result.schedule = local_search;  // CBC did not take its start
  }
  result.period_optimal = result.period_proven_lower_cycles == period;
  result.bytes = modulo_cross_bytes(result.schedule, edges);
  result.bytes_optimal = options.minimise_bytes && found.optimal;
  result.bytes_lower_bound = options.minimise_bytes ? std::max(0.0, std::ceil(found.bound - 1e-6)) : 0;

  if (options.minimise_memory && left_s() > 0 && !result.too_large) {
    PeriodProgram program(tasks, edges, processors, period);
    program.start_from(result.schedule);
    program.set_goal(Goal::memory, static_cast<double>(result.bytes));
    const auto memory = program.solve(left_s(), options.max_nodes);
    ++result.solves;
    if (memory.found && modulo_cross_bytes(memory.schedule, edges) <= result.bytes) {
      result.schedule.processor = memory.schedule.processor;
      result.schedule.start_cycles = memory.schedule.start_cycles;
      result.memory_optimal = memory.optimal;
    }
  }
  result.schedule.iteration_bound_cycles = bounds.iteration_bound_cycles;
  result.schedule.processor_bound_cycles = bounds.processor_bound_cycles;
  result.schedule.lower_bound_cycles = bounds.lower_bound_cycles;
  result.held_byte_cycles = modulo_held_byte_cycles(result.schedule, tasks, edges);
  result.time_limit_reached = result.time_limit_reached || left_s() <= 0;
  result.solve_s = std::chrono::duration<double>(Clock::now() - begin).count();
  check_modulo_schedule(result.schedule, tasks, edges, processors);
  return result;
}

#endif

}  // namespace pipetwin
