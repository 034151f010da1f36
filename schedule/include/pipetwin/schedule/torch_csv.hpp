// Interchange with PyTorch: the schedule CSV of torch.distributed.pipelining
// (PipelineScheduleMulti._dump_csv / _load_csv). One row per rank; each cell an action
// "<stage><F|I|W|B><microbatch>" (forward, input gradient, weight gradient, full backward), empty
// for an idle step. A file describes one optimizer step. On import, torch's bookkeeping actions
// (UNSHARD, RESHARD, REDUCE_GRAD, SEND_F/RECV_F/SEND_B/RECV_B) are counted and skipped, since
// pipetwin makes its own transfers and holds whole weights; "(A;B)OVERLAP_F_B" runs A then B.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pipetwin/schedule/pipeline_builder.hpp"

namespace pipetwin {

// The compute order of minibatch 0, one row per processor. Throws for schedules that are not
// one synchronous step (PyTorch's format has no weight versions across steps).
std::string graph_to_torch_csv(const TaskGraph& graph);

struct TorchSchedule {
  std::vector<std::vector<StageOp>> rank_ops;  // per rank, one step (minibatch 0)
  std::vector<int> stage_rank;                 // per stage
  int microbatches = 0;
  std::map<std::string, int> skipped_actions;  // bookkeeping actions by kind, not imported
  int overlapped_pairs = 0;                    // OVERLAP_F_B cells, run one action after the other
};

// "skipped 8 UNSHARD, 8 RESHARD (...); 4 OVERLAP_F_B pairs run in order", or "" for a plain file.
std::string describe_import_notes(const TorchSchedule& schedule);

// Parses and checks a CSV: every stage on one rank, every microbatch forwarded and backwarded
// once per stage (B, or I and W). Errors name the source, the row and the cell.
TorchSchedule parse_torch_csv(const std::string& text, const std::string& source);

// `torch-csv` in the registry: the schedule in the file named by the `file` parameter, repeated
// for every minibatch with one update per stage after each step.
TaskGraph generate_torch_csv(const ScheduleRequest& request);

}  // namespace pipetwin
