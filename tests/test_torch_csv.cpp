// PyTorch's compute-only schedule CSV: round trips, files as PyTorch writes them, errors.
#include <doctest/doctest.h>

#include <fstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/torch_csv.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig config_for(const std::string& schedule, int P, int M) {
  GraphConfig config = test::graph_config("resnet20", schedule, "h100", P, M, 2);
  return config;
}

// In the test process's own temporary folder (removed at exit).
std::string write(const std::string& name, const std::string& text) {
  const std::string path = test::process_temporary_folder().file(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("our synchronous schedules survive export to PyTorch's CSV and import back") {
  for (const std::string schedule : {"gpipe", "1f1b", "zb-h1", "zb-h2", "sequential"}) {
    for (int P = 1; P <= 4; ++P) {
      CAPTURE(schedule);
      CAPTURE(P);
      const TaskGraph original = make_graph(config_for(schedule, P, 4));
      const std::string csv = graph_to_torch_csv(original);
      GraphConfig imported_config = config_for("torch-csv", P, 4);
      imported_config.params = {"file=" + write("roundtrip.csv", csv)};
      const TaskGraph imported = make_graph(imported_config);
      CHECK(validate(imported).empty());
      CHECK(graph_to_torch_csv(imported) == csv);
      const auto a = evaluate_times(original), b = evaluate_times(imported);
      REQUIRE(a.size() == b.size());
      std::int64_t end_a = 0, end_b = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        end_a = std::max(end_a, a[i].end_cycles);
        end_b = std::max(end_b, b[i].end_cycles);
      }
      CHECK(end_a == end_b);
    }
  }
}

TEST_CASE("a CSV as PyTorch writes it: idle steps as empty cells, split backwards") {
  // 2 ranks, 2 microbatches, zero-bubble style: F, I (input gradient) and W (weight gradient).
  const std::string csv = "0F0,0F1,,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n";
  const TorchSchedule parsed = parse_torch_csv(csv, "zb.csv");
  CHECK(parsed.microbatches == 2);
  CHECK(parsed.stage_rank == std::vector<int>{0, 1});
  REQUIRE(parsed.rank_ops[0].size() == 6);
  CHECK(parsed.rank_ops[0][2].kind == TaskKind::BA);
  CHECK(parsed.rank_ops[1][5].kind == TaskKind::BW);
}

TEST_CASE("an interleaved (looped) PyTorch schedule: two stages per rank") {
  // Stages 0 and 2 on rank 0, 1 and 3 on rank 1; one microbatch.
  const std::string csv = "0F0,2F0,2B0,0B0\n1F0,3F0,3B0,1B0\n";
  GraphConfig config = config_for("torch-csv", 2, 1);
  config.params = {"file=" + write("looped.csv", csv)};
  const TaskGraph g = make_graph(config);
  REQUIRE(g.stages.size() == 4);
  CHECK(g.stages[2].processor == 0);
  CHECK(g.stages[3].processor == 1);
  CHECK(validate(g).empty());
  CHECK(evaluate(g).total_cycles > 0);
}

TEST_CASE("bad PyTorch CSVs get errors naming the row and cell") {
  CHECK_THROWS_WITH_AS(parse_torch_csv("0F0,0X0\n", "s.csv"),
                       doctest::Contains("s.csv: row 1, cell 2 '0X0': unknown action 'X0'"), Error);
  CHECK_THROWS_WITH_AS(parse_torch_csv("0F99999999999,0B0\n", "s.csv"), doctest::Contains("an index above"), Error);
  CHECK_THROWS_WITH_AS(parse_torch_csv("0F,0B0\n", "s.csv"), doctest::Contains("needs its microbatch"), Error);
  CHECK_THROWS_WITH_AS(parse_torch_csv("(0F0;0UNSHARD)OVERLAP_F_B\n", "s.csv"),
                       doctest::Contains("OVERLAP_F_B overlaps two compute actions"), Error);
  CHECK_THROWS_WITH_AS(parse_torch_csv("0F0,0B0\n0F1,0B1\n", "s.csv"),
                       doctest::Contains("row 2, cell 1 '0F1': stage 0 is already on rank 0"), Error);
  CHECK_THROWS_WITH_AS(parse_torch_csv("0F0,0I0\n", "s.csv"),
                       "s.csv: stage 0 microbatch 0 needs one F and either one B or one I and one W; it has 'FI'",
                       Error);
  GraphConfig config = config_for("torch-csv", 3, 1);
  config.params = {"file=" + write("two_ranks.csv", "0F0,0B0\n1F0,1B0\n")};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("has 2 ranks; set the processor count (--procs) to 2"), Error);
  config.params = {};
  CHECK_THROWS_WITH_AS(make_graph(config), doctest::Contains("give the schedule file with file="), Error);
  CHECK_THROWS_WITH_AS(graph_to_torch_csv(make_graph(config_for("pipedream", 2, 2))),
                       doctest::Contains("one synchronous step"), Error);
}

TEST_CASE("torch's bookkeeping actions are skipped and counted, OVERLAP_F_B runs its pair in order") {
  // GPipe as torch 2.x writes it with FSDP: unshard, compute, reduce, reshard; and sends/receives.
  const std::string csv =
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
      "1UNSHARD,1RECV_F0,1F0,1RECV_F1,(1F1;1B0)OVERLAP_F_B,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n";
  const TorchSchedule s = parse_torch_csv(csv, "gpipe.csv");
  REQUIRE(s.rank_ops.size() == 2);
  CHECK(s.microbatches == 2);
  CHECK(s.rank_ops[0].size() == 4);
  REQUIRE(s.rank_ops[1].size() == 4);
  // The overlapped pair in the cell's order: F of microbatch 1, then B of microbatch 0.
  CHECK(s.rank_ops[1][1].kind == TaskKind::F);
  CHECK(s.rank_ops[1][1].microbatch == 1);
  CHECK(s.rank_ops[1][2].kind == TaskKind::B);
  CHECK(s.rank_ops[1][2].microbatch == 0);
  CHECK(s.overlapped_pairs == 1);
  CHECK(s.skipped_actions.at("UNSHARD") == 2);
  CHECK(s.skipped_actions.at("REDUCE_GRAD") == 2);
  CHECK(s.skipped_actions.at("SEND_F") == 2);
  CHECK(s.skipped_actions.at("RECV_B") == 2);
  CHECK(describe_import_notes(s).find("skipped 2 RECV_B, 2 RECV_F, 2 REDUCE_GRAD, 2 RESHARD, 2 SEND_B, 2 SEND_F, 2 UNSHARD") == 0);
  CHECK(describe_import_notes(s).find("1 OVERLAP_F_B pairs run one action after the other") != std::string::npos);
  // The compute-only file of the same schedule gives the same graph.
  GraphConfig with_bookkeeping = config_for("torch-csv", 2, 2);
  with_bookkeeping.params = {"file=" + write("bookkeeping.csv", csv)};
  GraphConfig compute_only = config_for("torch-csv", 2, 2);
  compute_only.params = {"file=" + write("compute.csv", "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n")};
  CHECK(evaluate(make_graph(with_bookkeeping)).total_cycles == evaluate(make_graph(compute_only)).total_cycles);
}
