// PyTorch's compute-only pipeline schedule CSV: export from, and import into, task graphs.
#include "pipetwin/schedule/torch_csv.hpp"

#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/json_read.hpp"

namespace pipetwin {
namespace {

char action_letter(TaskKind kind) {
  switch (kind) {
    case TaskKind::F: return 'F';
    case TaskKind::B: return 'B';
    case TaskKind::BA: return 'I';
    case TaskKind::BW: return 'W';
    default: return 0;
  }
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (const char c : line) {
    if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c != '"' && c != '\r') {
      cell += c;
    }
  }
  cells.push_back(cell);
  return cells;
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace

std::string graph_to_torch_csv(const TaskGraph& g) {
  if (!g.collectives.empty()) {
    throw Error("PyTorch's schedule CSV describes one pipeline: build the graph without dp= (its " +
                std::to_string(g.collectives.size()) + " all-reduces have no actions there)");
  }
  if (g.semantics != WeightSemantics::synchronous) {
    throw Error("schedule " + g.schedule + " has " + to_string(g.semantics) +
                " weights; PyTorch's schedule format describes one synchronous step");
  }
  std::ostringstream out;
  for (const auto& list : tasks_by_processor(g)) {
    std::string row;
    for (const auto id : list) {
      const Task& t = g.tasks[id];
      if (t.minibatch != 0 || t.kind == TaskKind::U) continue;
      const char letter = action_letter(t.kind);
      if (letter == 0) {
        throw Error(describe_task(g, t) + ": PyTorch's compute-only format has no " + to_string(t.kind) + " action");
      }
      row += (row.empty() ? "" : ",") + std::to_string(t.stage) + letter + std::to_string(t.microbatch);
    }
    out << row << "\n";
  }
  return out.str();
}

namespace {

// One action of a cell: "<stage><kind>[<microbatch>]" as torch.distributed.pipelining writes it.
struct TorchAction {
  int stage = 0;
  std::string kind;     // F, I, W, B, or a bookkeeping action (UNSHARD, SEND_F, ...)
  int microbatch = -1;  // -1 where the action has none
};

constexpr int kMaxTorchIndex = 1 << 20;  // stages and microbatches: far beyond any schedule

// The leading decimal digits of `text` from `at` (advanced past them), at most kMaxTorchIndex;
// -1 when there are none.
int read_index(const std::string& text, std::size_t& at, const std::string& where) {
  const std::size_t begin = at;
  long long value = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    value = value * 10 + (text[at++] - '0');
    if (value > kMaxTorchIndex) throw Error(where + ": an index above " + std::to_string(kMaxTorchIndex));
  }
  return at == begin ? -1 : static_cast<int>(value);
}

TorchAction parse_action(const std::string& text, const std::string& where) {
  static const char* const kKinds[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD", "SEND_F", "RECV_F", "SEND_B", "RECV_B",
                                       "F", "I", "W", "B"};
  TorchAction action;
  std::size_t at = 0;
  action.stage = read_index(text, at, where);
  if (action.stage < 0) throw Error(where + ": expected <stage><F|I|W|B><microbatch>, e.g. 0F1");
  for (const char* kind : kKinds) {
    if (text.compare(at, std::string(kind).size(), kind) == 0) {
      action.kind = kind;
      break;
    }
  }
  if (action.kind.empty()) {
    throw Error(where + ": unknown action '" + text.substr(at) + "' (known: F, I, W, B, UNSHARD, RESHARD, "
                "REDUCE_GRAD, SEND_F, RECV_F, SEND_B, RECV_B, and (A;B)OVERLAP_F_B)");
  }
  at += action.kind.size();
  action.microbatch = read_index(text, at, where);
  if (at != text.size()) throw Error(where + ": unexpected '" + text.substr(at) + "' after the action");
  const bool compute = action.kind.size() == 1;
  if (compute && action.microbatch < 0) throw Error(where + ": a compute action needs its microbatch, e.g. 0F1");
  return action;
}

}  // namespace

TorchSchedule parse_torch_csv(const std::string& text, const std::string& source) {
  TorchSchedule schedule;
  std::map<int, int> stage_rank;
  std::map<std::pair<int, int>, std::string> seen;  // (stage, microbatch) -> letters
  std::istringstream lines(text);
  std::string line;
  int rank = 0;
  while (std::getline(lines, line)) {
    if (trim(line).empty() && lines.peek() == EOF) break;
    std::vector<StageOp> ops;
    const auto cells = split_cells(line);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string cell = trim(cells[c]);
      if (cell.empty()) continue;  // an idle step
      const std::string where = source + ": row " + std::to_string(rank + 1) + ", cell " +
                                std::to_string(c + 1) + " '" + cell + "'";
      // "(0F3;1B0)OVERLAP_F_B": a forward and a backward the rank overlaps; here they run one after
      // the other, in the cell's order.
      std::vector<TorchAction> actions;
      const std::string overlap = ")OVERLAP_F_B";
      if (!cell.empty() && cell.front() == '(') {
        if (cell.size() <= overlap.size() || cell.compare(cell.size() - overlap.size(), overlap.size(), overlap) != 0) {
          throw Error(where + ": a parenthesised cell must be (<action>;<action>)OVERLAP_F_B");
        }
        std::istringstream parts(cell.substr(1, cell.size() - 1 - overlap.size()));
        std::string part;
        while (std::getline(parts, part, ';')) actions.push_back(parse_action(trim(part), where));
        if (actions.size() != 2 || actions[0].kind.size() != 1 || actions[1].kind.size() != 1) {
          throw Error(where + ": OVERLAP_F_B overlaps two compute actions (F, I, W or B)");
        }
        ++schedule.overlapped_pairs;
      } else {
        actions.push_back(parse_action(cell, where));
      }
      for (const auto& action : actions) {
        if (action.kind.size() != 1) {  // communication and resharding: pipetwin makes its own transfers
          ++schedule.skipped_actions[action.kind];
          continue;
        }
        const char letter = action.kind[0];
        const TaskKind kind = letter == 'F' ? TaskKind::F : letter == 'B' ? TaskKind::B : letter == 'I' ? TaskKind::BA : TaskKind::BW;
        const int stage = action.stage, microbatch = action.microbatch;
        const auto placed = stage_rank.emplace(stage, rank);
        if (placed.first->second != rank) {
          throw Error(where + ": stage " + std::to_string(stage) + " is already on rank " +
                      std::to_string(placed.first->second) + "; a stage runs on one rank");
        }
        std::string& letters = seen[{stage, microbatch}];
        if (letters.find(letter) != std::string::npos) throw Error(where + ": the same action appears twice");
        letters += letter;
        ops.push_back({kind, stage, 0, microbatch});
        schedule.microbatches = std::max(schedule.microbatches, microbatch + 1);
      }
    }
    schedule.rank_ops.push_back(std::move(ops));
    ++rank;
  }
  if (schedule.rank_ops.empty() || stage_rank.empty()) throw Error(source + ": no actions");
  const int stages = stage_rank.rbegin()->first + 1;
  for (int s = 0; s < stages; ++s) {
    if (!stage_rank.count(s)) throw Error(source + ": stage " + std::to_string(s) + " never appears");
    schedule.stage_rank.push_back(stage_rank.at(s));
    for (int m = 0; m < schedule.microbatches; ++m) {
      const std::string letters = seen.count({s, m}) ? seen.at({s, m}) : "";
      const bool forward = letters.find('F') != std::string::npos;
      const bool full = letters.find('B') != std::string::npos;
      const bool split = letters.find('I') != std::string::npos && letters.find('W') != std::string::npos;
      const bool partial = (letters.find('I') != std::string::npos) != (letters.find('W') != std::string::npos);
      if (!forward || !(full || split) || partial || (full && split)) {
        throw Error(source + ": stage " + std::to_string(s) + " microbatch " + std::to_string(m) +
                    " needs one F and either one B or one I and one W; it has '" + letters + "'");
      }
    }
  }
  return schedule;
}

std::string describe_import_notes(const TorchSchedule& schedule) {
  std::string note;
  for (const auto& [kind, count] : schedule.skipped_actions) {
    note += (note.empty() ? "skipped " : ", ") + std::to_string(count) + " " + kind;
  }
  if (!note.empty()) note += " (pipetwin makes its own transfers and holds whole weights)";
  if (schedule.overlapped_pairs > 0) {
    note += (note.empty() ? "" : "; ") + std::to_string(schedule.overlapped_pairs) +
            " OVERLAP_F_B pairs run one action after the other";
  }
  return note;
}

TaskGraph generate_torch_csv(const ScheduleRequest& request) {
  const std::string file = request.params.get_string("file", "");
  if (file.empty()) throw Error("torch-csv: give the schedule file with file=path/to/schedule.csv");
  const TorchSchedule torch = parse_torch_csv(JsonReader::read_text_file(file), file);
  const int ranks = static_cast<int>(torch.rank_ops.size());
  if (ranks != request.processors) {
    throw Error(file + " has " + std::to_string(ranks) + " ranks; set the processor count (--procs) to " +
                std::to_string(ranks));
  }
  if (torch.microbatches != request.microbatches) {
    throw Error(file + " schedules " + std::to_string(torch.microbatches) +
                " microbatches per step; set --microbatches " + std::to_string(torch.microbatches));
  }
  const int stages = static_cast<int>(torch.stage_rank.size());
  StagePlan plan = plan_stages(request, stages);
  plan.stage_processor = torch.stage_rank;
  std::vector<std::vector<StageOp>> ops(ranks);
  for (int k = 0; k < request.minibatches; ++k) {
    for (int r = 0; r < ranks; ++r) {
      for (StageOp op : torch.rank_ops[r]) {
        op.minibatch = k;
        ops[r].push_back(op);
      }
      for (int s = 0; s < stages; ++s) {
        if (torch.stage_rank[s] == r) ops[r].push_back({TaskKind::U, s, k, -1});
      }
    }
  }
  return build_pipeline(request, "torch-csv", WeightSemantics::synchronous, plan, ops);
}

}  // namespace pipetwin
