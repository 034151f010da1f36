// ASCII space-time diagrams: processors down, time across.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "pipetwin/schedule/views.hpp"

namespace pipetwin {
namespace {

std::string short_label(const TaskGraph& g, const Task& t) {
  char kind = 'F';
  switch (t.kind) {
    case TaskKind::F: kind = 'F'; break;
    case TaskKind::B: kind = 'B'; break;
    case TaskKind::BA: kind = 'A'; break;
    case TaskKind::BW: kind = 'W'; break;
    case TaskKind::U: kind = 'U'; break;
    case TaskKind::RC: kind = 'R'; break;
    default: kind = 'X'; break;
  }
  if (t.microbatch < 0) return std::string(1, kind);
  return kind + std::to_string(std::max(0, t.minibatch) * g.microbatches + t.microbatch);
}

}  // namespace

std::string space_time_diagram(const TaskGraph& g, const Result& r, int max_width) {
  std::int64_t shortest = 0;
  for (const auto& t : g.tasks) {
    if (t.placement == Placement::processor && t.cost_cycles > 0) {
      shortest = shortest == 0 ? t.cost_cycles : std::min(shortest, t.cost_cycles);
    }
  }
  const double total = static_cast<double>(std::max<std::int64_t>(r.total_cycles, 1));
  // Columns per cycle: enough for the shortest task to show three characters, within the width.
  double columns_per_cycle = shortest > 0 ? 3.0 / static_cast<double>(shortest) : 1.0;
  columns_per_cycle = std::min(columns_per_cycle, static_cast<double>(max_width) / total);
  const int width = std::max(1, static_cast<int>(std::lround(total * columns_per_cycle)));
  auto column = [&](std::int64_t cycles) {
    return static_cast<int>(std::lround(static_cast<double>(cycles) * columns_per_cycle));
  };

  std::ostringstream out;
  std::size_t name_width = 0;
  for (const auto& p : g.processors) name_width = std::max(name_width, p.name.size());
  const auto by_processor = tasks_by_processor(g);
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    std::string row(static_cast<std::size_t>(width), '.');
    for (const auto id : by_processor[p]) {
      const Task& t = g.tasks[id];
      const int from = column(r.tasks[id].start_cycles), to = column(r.tasks[id].end_cycles);
      if (to <= from) continue;  // too short to show
      std::string text = short_label(g, t);
      text.resize(static_cast<std::size_t>(to - from), ' ');
      row.replace(static_cast<std::size_t>(from), text.size(), text);
    }
    std::string name = g.processors[p].name;
    name.resize(name_width, ' ');
    out << name << " |" << row << "|\n";
  }
  std::ostringstream scale;
  scale << r.total_cycles << " cycles, " << (1.0 / columns_per_cycle) << " cycles per column";
  out << std::string(name_width, ' ') << "  " << scale.str() << "\n";
  out << std::string(name_width, ' ')
      << "  F forward, B backward, A activation gradient, W weight gradient, U update; the number is "
         "the microbatch (minibatch x microbatches + microbatch); . idle\n";
  return out.str();
}

}  // namespace pipetwin
