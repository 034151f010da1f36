// The loaders' errors for malformed input: what is wrong and where, never a raw library message
// (hardware JSON, calibration tables).
#include <doctest/doctest.h>

#include <cmath>

#include <string>
#include <utility>
#include <vector>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/json_read.hpp"
#include "pipetwin/models/params.hpp"

using namespace pipetwin;

namespace {

const std::string kProcessor =
    R"({"clock_hz": 1e9, "peak_flops_per_s": {"fp32": 1e12}, "precision": "fp32", "memory_bytes": 1000000,
        "memory_bytes_per_s": 1e9)";

std::string hardware(const std::string& processor_extra, const std::string& top_extra = "") {
  return R"({"name": "x", "cost_model": "roofline", "processor": )" + kProcessor + processor_extra +
         R"(}, "link": "nvlink", "host_link": "pcie4", "topology": "chain")" + top_extra + "}";
}

std::string calibration(const std::string& extra, const std::string& layers, int samples = 4) {
  return R"({"format": "pipetwin-calibration-1", "device": "cpu", "network": "mlp", "samples": )" +
         std::to_string(samples) + extra +
         R"(, "layers": [)" + layers + "]}";
}

}  // namespace

TEST_CASE("hardware JSON: wrong types, impossible numbers and NaN overheads are clear errors") {
  const Params none;
  CHECK(hardware_from_json_text(hardware(""), "h.json", none).processor.clock_hz == 1e9);
  CHECK_THROWS_WITH_AS(hardware_from_json_text(hardware(R"(, "partitionable": 1)"), "h.json", none),
                       "h.json: /processor/partitionable: expected true or false, got an integer", Error);
  CHECK_THROWS_WITH_AS(hardware_from_json_text(R"({"name": "x", "processor": -1})", "h.json", none),
                       doctest::Contains("h.json: /processor: expected an object, got an integer"), Error);
  CHECK_THROWS_WITH_AS(hardware_from_json_text(hardware(R"(, "task_overhead_s": 1e400)"), "h.json", none),
                       "h.json: malformed JSON: number overflow parsing '1e400'", Error);
  CHECK_THROWS_WITH_AS(hardware_from_json_text(hardware(""), "h.json", Params::parse({"task_overhead_s=nan"})),
                       doctest::Contains("must be numbers >= 0, got nan"), Error);
}

TEST_CASE("hardware JSON: a measured all-reduce table is read with its source, bad tables are clear errors") {
  const Params none;
  const auto with = [](const std::string& all_reduce) { return hardware("", R"(, "all_reduce": )" + all_reduce); };
  const HardwareProfile hw = hardware_from_json_text(
      with(R"({"source": "a benchmark", "seconds": {"4": [[1000, 2e-5], [3000, 6e-5]]}})"), "h.json", none);
  CHECK(hw.all_reduce.source == "a benchmark");
  CHECK(hw.all_reduce.covers(4));
  CHECK_FALSE(hw.all_reduce.covers(2));
  // At a point, between two (linear), below the first (from the caller's time at 0 bytes), above
  // the last (the last segment's slope: 2e-8 s per byte).
  CHECK(hw.all_reduce.seconds(4, 1000, 1e-6) == doctest::Approx(2e-5).scale(0));
  CHECK(hw.all_reduce.seconds(4, 2000, 1e-6) == doctest::Approx(4e-5).scale(0));
  CHECK(hw.all_reduce.seconds(4, 500, 1e-6) == doctest::Approx(1e-6 + (2e-5 - 1e-6) / 2).scale(0));
  CHECK(hw.all_reduce.seconds(4, 5000, 1e-6) == doctest::Approx(1e-4).scale(0));
  CHECK_THROWS_WITH_AS(hw.all_reduce.seconds(2, 1000, 0), "no measured all-reduce among 2 GPUs", Error);
  CHECK_FALSE(hardware_from_json_text(hardware(""), "h.json", none).all_reduce.covers(2));
  // Another link or topology than the one it was measured on sets the table aside.
  const std::string table = R"({"source": "a", "seconds": {"4": [[1000, 2e-5], [3000, 6e-5]]}})";
  CHECK_FALSE(hardware_from_json_text(with(table), "h.json", Params::parse({"link=pcie4"})).all_reduce.covers(4));
  CHECK_FALSE(hardware_from_json_text(with(table), "h.json", Params::parse({"topology=ring"})).all_reduce.covers(4));

  const auto error = [&](const std::string& all_reduce) {
    try {
      hardware_from_json_text(with(all_reduce), "h.json", none);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto check_error = [&](const std::string& all_reduce, const std::string& expected) {
    const std::string what = error(all_reduce);
    INFO(what);
    CHECK(what.find(expected) != std::string::npos);
  };
  check_error(R"({"source": "b", "seconds": {"1": [[1, 1], [2, 2]]}})",
              "h.json: /all_reduce/seconds/1: expected a key that is a number of GPUs from 2 to 4096");
  check_error(R"({"source": "b", "seconds": {"eight": [[1, 1], [2, 2]]}})",
              "/all_reduce/seconds/eight: expected a key that is a number of GPUs");
  check_error(R"({"source": "b", "seconds": {"04": [[1, 1], [2, 2]]}})",
              "/all_reduce/seconds/04: expected a key that is a number of GPUs");
  check_error(R"({"source": "b", "seconds": {"4": [[3000, 1e-5], [1000, 2e-5]]}})",
              "/all_reduce/seconds/4/1/0: expected a positive size above the previous point's");
  check_error(R"({"source": "b", "seconds": {"4": [[1000, 1e-5]]}})",
              "/all_reduce/seconds/4: expected at least two [bytes, seconds] points");
  check_error(R"({"source": "b", "seconds": {"4": [[1000, 1e-5], [2000, -1]]}})",
              "/all_reduce/seconds/4/1/1: expected a positive number of seconds");
  check_error(R"({"source": "b", "seconds": {"4": [[1000, 1e-5, 3], [2000, 1]]}})",
              "/all_reduce/seconds/4/0: expected [bytes, seconds]");
  check_error(R"({"source": "", "seconds": {"4": [[1000, 1e-5], [2000, 1]]}})",
              "/all_reduce/source: expected where the measurement comes from");
  check_error(R"({"seconds": {"4": [[1000, 1e-5], [2000, 1]]}})", "/all_reduce");
  check_error(R"({"source": "b", "seconds": {}})",
              "/all_reduce/seconds: expected measurements for at least one number of GPUs");
  check_error(R"({"source": "b", "seconds": {"4": [[1, 1], [2, 2]]}, "bytes": 1})", "bytes");
}

TEST_CASE("calibration tables: unknown keys, repeated layers and impossible times are clear errors") {
  const std::string layer = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 1e-6, "BW_s": 1e-6, "U_s": 1e-7})";
  const Calibration ok = calibration_from_json_text(calibration("", layer), "c.json");
  CHECK(ok.layers.at("fc1").forward_s == 1e-6);
  CHECK(ok.copy_latency_s == -1);  // not measured
  CHECK(ok.handoff_s == -1);
  CHECK(ok.one_handoff_s() == -1);
  // A table from before handoff_s: half its two-hop copy latency; with it, its own.
  CHECK(calibration_from_json_text(calibration(R"(, "copy_latency_s": 8e-5)", layer), "c.json").one_handoff_s() == 4e-5);
  const Calibration handoff = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(calibration(R"(, "copy_latency_s": 8e-5, "handoff_s": 3e-5)", layer), "c.json")),
      "c.json");
  CHECK(handoff.handoff_s == 3e-5);
  CHECK(handoff.pipeline_schedule.empty());
  CHECK(handoff.kind_overhead_s.empty());
  CHECK_FALSE(handoff.overheads_from_unmarked_twins);
  // A table whose overheads came from unmarked twins says so, through a round trip; not a yes/no: refused.
  CHECK(calibration_from_json_text(
            calibration_to_json_text(calibration_from_json_text(calibration(R"(, "overheads_from_unmarked_twins": true)", layer), "c.json")),
            "c.json")
            .overheads_from_unmarked_twins);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "overheads_from_unmarked_twins": 1)", layer), "c.json"),
                       doctest::Contains("overheads_from_unmarked_twins"), Error);
  // Overheads per task kind: kept through a round trip, and read by kind.
  const Calibration kinds = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(
          calibration(R"(, "task_overhead_s": 5e-6, "kind_overhead_s": {"F": 7e-6, "BA": 1e-6})", layer), "c.json")),
      "c.json");
  CHECK(kinds.task_overhead_s_of(TaskKind::F) == 7e-6);
  CHECK(kinds.task_overhead_s_of(TaskKind::BA) == 1e-6);
  CHECK(kinds.task_overhead_s_of(TaskKind::B) == 5e-6);
  CHECK(kinds.stage_kind_overhead_s.empty());
  CHECK(kinds.stage_task_overhead_s_of(TaskKind::BA) == 1e-6);  // none timed over a stage: the kind's
  // Split tasks over a stage: their own per kind, kept through a round trip; the kind's elsewhere.
  const Calibration stage = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(
          calibration(R"(, "task_overhead_s": 5e-6, "kind_overhead_s": {"BA": 2e-6}, "stage_kind_overhead_s": {"BA": 6e-7})", layer),
          "c.json")),
      "c.json");
  CHECK(stage.stage_task_overhead_s_of(TaskKind::BA) == 6e-7);
  CHECK(stage.task_overhead_s_of(TaskKind::BA) == 2e-6);
  CHECK(stage.stage_task_overhead_s_of(TaskKind::BW) == 5e-6);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "stage_kind_overhead_s": {"BW": -1})", layer), "c.json"),
                       doctest::Contains("stage_kind_overhead_s/BW"), Error);
  CHECK(kinds.input_load_s == 0);  // not measured
  CHECK(calibration_from_json_text(calibration_to_json_text(calibration_from_json_text(
                                       calibration(R"(, "input_load_s": 1.5e-5)", layer), "c.json")),
                                   "c.json")
            .input_load_s == 1.5e-5);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "input_load_s": -1)", layer), "c.json"),
                       doctest::Contains("input_load_s"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "kind_overhead_s": {"OFF": 1e-6})", layer), "c.json"),
                       doctest::Contains("kind_overhead_s/OFF"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "kind_overhead_s": {"F": -1})", layer), "c.json"),
                       doctest::Contains("kind_overhead_s/F"), Error);
  // A table timed in a pipeline says which, and keeps it; it needs 2 or more processors.
  const Calibration piped = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(calibration(R"(, "concurrent": 2, "pipeline_schedule": "1f1b")", layer), "c.json")),
      "c.json");
  CHECK(piped.pipeline_schedule == "1f1b");
  CHECK(piped.concurrent == 2);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "pipeline_schedule": "1f1b")", layer), "c.json"),
                       doctest::Contains("pipeline_schedule"), Error);
  // Its co-run slope and share: kept, -1 when absent, a table timed in a pipeline only.
  CHECK(piped.co_run_slope == -1);
  CHECK(piped.co_run_share == -1);
  const std::string sloped = R"(, "concurrent": 2, "pipeline_schedule": "1f1b", "co_run_slope": 0.25, "co_run_share": 0.625)";
  const Calibration slope = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(calibration(sloped, layer), "c.json")), "c.json");
  CHECK(slope.co_run_slope == 0.25);
  CHECK(slope.co_run_share == 0.625);
  for (const char* bad : {R"(, "concurrent": 2, "pipeline_schedule": "1f1b", "co_run_slope": -0.5)",
                          R"(, "concurrent": 2, "pipeline_schedule": "1f1b", "co_run_share": 1.5)",
                          R"(, "concurrent": 2, "co_run_slope": 0.25)"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(bad, layer), "c.json"), doctest::Contains("co_run_s"), Error);
  }
  // What a footprint costs: kept, unmeasured when absent, its two footprints in order.
  CHECK(piped.footprint_slowdown == -1);
  CHECK(piped.timed_footprint_bytes == 0);
  CHECK(piped.footprint_factor(4000, 1000) == 1);
  const std::string footprint =
      R"(, "timed_footprint_bytes": 1000, "footprint_slowdown": 0.1, "footprint_small_bytes": 1000, "footprint_large_bytes": 3000)";
  const Calibration held = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(calibration(footprint, layer), "c.json")), "c.json");
  CHECK(held.timed_footprint_bytes == 1000);
  CHECK(held.footprint_slowdown == 0.1);
  CHECK(held.footprint_small_bytes == 1000);
  CHECK(held.footprint_large_bytes == 3000);
  // Linear between the two footprints, held at the ends: 0.1 x (2000 - 1000) / (3000 - 1000).
  CHECK(held.footprint_slowdown_at(2000) == doctest::Approx(0.05));
  CHECK(held.footprint_slowdown_at(500) == 0);
  CHECK(held.footprint_slowdown_at(9000) == doctest::Approx(0.1));
  CHECK(held.footprint_factor(2000, 1000) == doctest::Approx(1.05));
  CHECK(held.footprint_factor(3000, 2000) == doctest::Approx(1.1 / 1.05));
  CHECK(held.footprint_factor(3000, 0) == 1);  // timed at a footprint not recorded
  for (const char* bad : {R"(, "footprint_slowdown": -0.5, "footprint_small_bytes": 1000, "footprint_large_bytes": 3000)",
                          R"(, "footprint_slowdown": 0.1, "footprint_small_bytes": 3000, "footprint_large_bytes": 3000)",
                          R"(, "footprint_slowdown": 0.1)", R"(, "timed_footprint_bytes": -1)"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(bad, layer), "c.json"), doctest::Contains("footprint"), Error);
  }
  // The stash term's far point: kept, unmeasured when absent (the table and each layer).
  CHECK(piped.far_stash_distance_bytes == 0);
  CHECK(piped.layers.at("fc1").timed_stash_distance_bytes == -1);
  CHECK(piped.layers.at("fc1").far_forward_factor == -1);
  CHECK(piped.layers.at("fc1").far_backward_factor == -1);
  const std::string far_layer = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 1e-6, "BW_s": 1e-6, "U_s": 1e-7,
                                     "timed_stash_distance_bytes": 2048, "far_F_factor": 1.25, "far_B_factor": 1.125})";
  const Calibration far = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(calibration(R"(, "far_stash_distance_bytes": 9000)", far_layer), "c.json")),
      "c.json");
  CHECK(far.far_stash_distance_bytes == 9000);
  CHECK(far.layers.at("fc1").timed_stash_distance_bytes == 2048);
  CHECK(far.layers.at("fc1").far_forward_factor == 1.25);
  CHECK(far.layers.at("fc1").far_backward_factor == 1.125);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "far_stash_distance_bytes": -1)", layer), "c.json"),
                       doctest::Contains("far_stash_distance_bytes"), Error);
  for (const char* bad : {R"("timed_stash_distance_bytes": -2)", R"("far_F_factor": 0.9)", R"("far_B_factor": -0.5)"}) {
    CAPTURE(bad);
    const std::string bad_layer = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 1e-6, "BW_s": 1e-6, "U_s": 1e-7, )" + std::string(bad) + "}";
    CHECK_THROWS_AS(calibration_from_json_text(calibration("", bad_layer), "c.json"), Error);
  }

  CHECK(handoff.one_handoff_s() == 3e-5);
  // Copies timed at sizes: kept in order, and a copy's time read off them (linear between two
  // points, at the nearest point's rate beyond them); without them, at copy_bytes_per_s.
  const Calibration sized = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(
          calibration(R"(, "copy_bytes_per_s": 1e9, "copy_seconds": [[1000, 1e-7], [5000, 9e-7]])", layer), "c.json")),
      "c.json");
  REQUIRE(sized.copy_seconds.size() == 2);
  CHECK(sized.copy_seconds[1].first == 5000);
  CHECK(sized.copy_s(3000) == doctest::Approx(1e-7 + 8e-7 * 2000 / 4000).scale(0));
  CHECK(sized.copy_s(500) == doctest::Approx(500 * 1e-7 / 1000).scale(0));
  CHECK(sized.copy_s(10000) == doctest::Approx(10000 * 9e-7 / 5000).scale(0));
  CHECK(calibration_from_json_text(calibration(R"(, "copy_bytes_per_s": 1e9)", layer), "c.json").copy_s(3000) == doctest::Approx(3e-6).scale(0));
  CHECK(ok.copy_s(3000) == -1);  // nothing measured
  for (const auto& [points, message] : std::vector<std::pair<std::string, std::string>>{
           {"[[5000, 1e-7], [1000, 9e-7]]", "/copy_seconds/1/0: expected a positive size above the previous point's"},
           {"[[1000, 0]]", "/copy_seconds/0/1: expected a positive number of seconds"},
           {"[[1000]]", "/copy_seconds/0: expected [bytes, seconds]"}}) {
    CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(", \"copy_seconds\": " + points, layer), "c.json"),
                         doctest::Contains(message.c_str()), Error);
  }
  // The gap between tasks and the copies senders made in a pipeline: absent in older tables (-1,
  // none), read back as written, checked like the others.
  CHECK(ok.task_gap_s == -1);
  CHECK(ok.pipeline_copy_seconds.empty());
  CHECK(calibration_to_json_text(ok).find("task_gap_s") == std::string::npos);
  const Calibration gapped = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(
          calibration(R"(, "task_gap_s": 3e-7, "pipeline_copy_seconds": [[16384, 8e-7], [65536, 2e-6]])", layer), "c.json")),
      "c.json");
  CHECK(gapped.task_gap_s == 3e-7);
  REQUIRE(gapped.pipeline_copy_seconds.size() == 2);
  CHECK(gapped.pipeline_copy_seconds[1] == std::make_pair(std::int64_t{65536}, 2e-6));
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "task_gap_s": -2e-7)", layer), "c.json"),
                       doctest::Contains("/task_gap_s: expected seconds >= 0, or -1 for not measured"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "pipeline_copy_seconds": [[16384, -1]])", layer), "c.json"),
                       doctest::Contains("/pipeline_copy_seconds/0/1: expected a positive number of seconds"), Error);
  // The timed run's task spread: absent in older tables (-1), read back as written, a fraction >= 0.
  CHECK(ok.task_time_spread == -1);
  CHECK(calibration_to_json_text(ok).find("task_time_spread") == std::string::npos);
  CHECK(calibration_from_json_text(calibration_to_json_text(calibration_from_json_text(
                                       calibration(R"(, "task_time_spread": 0.023)", layer), "c.json")),
                                   "c.json")
            .task_time_spread == 0.023);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "task_time_spread": -0.5)", layer), "c.json"),
                       doctest::Contains("/task_time_spread: expected a fraction >= 0"), Error);
  CHECK(ok.concurrent == 1);        // older tables: timed alone
  CHECK(calibration_from_json_text(calibration(R"(, "concurrent": 2)", layer), "c.json").concurrent == 2);
  CHECK(ok.cores == 0);  // older tables: not recorded
  CHECK(calibration_from_json_text(calibration(R"(, "cores": 2)", layer), "c.json").cores == 2);
  CHECK(calibration_from_json_text(calibration_to_json_text(calibration_from_json_text(calibration(R"(, "cores": 6)", layer), "c.json")),
                                   "c.json").cores == 6);
  CHECK(ok.core_copy_bytes_per_s == 0);  // one process: the copy bandwidth
  CHECK(calibration_from_json_text(calibration_to_json_text(calibration_from_json_text(
                                       calibration(R"(, "core_copy_bytes_per_s": 5e9)", layer), "c.json")),
                                   "c.json").core_copy_bytes_per_s == 5e9);
  CHECK(ok.ranks == 1);
  const Calibration across = calibration_from_json_text(
      calibration_to_json_text(calibration_from_json_text(
          calibration(R"(, "ranks": 2, "message_send_core_s": 1e-5, "message_receive_core_bytes_per_s": 2e9)", layer), "c.json")),
      "c.json");
  CHECK(across.ranks == 2);
  CHECK(across.message_send_core_s == 1e-5);
  CHECK(across.message_receive_core_bytes_per_s == 2e9);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "ranks": 0)", layer), "c.json"),
                       doctest::Contains("/ranks: expected a number of MPI ranks from 1 to 1048576"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "core_copy_bytes_per_s": -1)", layer), "c.json"),
                       doctest::Contains("/core_copy_bytes_per_s: expected bytes per second >= 0"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "cores": -1)", layer), "c.json"),
                       doctest::Contains("c.json: /cores: expected a number of CPUs from 0 (not recorded) to 1048576"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "concurrent": 0)", layer), "c.json"),
                       doctest::Contains("c.json: /concurrent: expected a number of copies from 1 to 4096"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration(R"(, "speed": 3)", layer), "c.json"),
                       doctest::Contains("c.json: /speed: unknown key 'speed'"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration("", layer + "," + layer), "c.json"),
                       "c.json: /layers/1/name: expected a layer not named before, got a string 'fc1'", Error);
  CHECK_THROWS_WITH_AS(
      calibration_from_json_text(calibration("", R"({"name": "fc1", "F_s": -1, "BA_s": 0, "BW_s": 0, "U_s": 0})"), "c.json"),
      "c.json: /layers/0/F_s: expected seconds >= 0, got an integer", Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration("", R"({"name": "fc1", "F_s": 1})"), "c.json"),
                       doctest::Contains("missing required key 'BA_s'"), Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration("", layer, 0), "c.json"),
                       "c.json: /samples: expected a positive number of samples, got an integer", Error);
  CHECK_THROWS_WITH_AS(calibration_from_json_text("{\"format\": 1}", "c.json"),
                       doctest::Contains("expected a string, got an integer"), Error);
}

TEST_CASE("JSON: a key given twice in one object is an error that names the object") {
  const Params none;
  // nlohmann alone would keep the last value silently.
  CHECK_THROWS_WITH_AS(hardware_from_json_text(hardware(R"(, "clock_hz": 2e9)"), "h.json", none),
                       "h.json: /processor: the key 'clock_hz' is given twice", Error);
  const std::string layer = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 1e-6, "BW_s": 1e-6, "U_s": 1e-7, "F_s": 2})";
  CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration("", R"({"name": "fc0", "F_s": 0, "BA_s": 0, "BW_s": 0, "U_s": 0},)" + layer), "c.json"),
                       "c.json: /layers/1: the key 'F_s' is given twice", Error);
  // The same key in two different objects, and nested arrays, are fine.
  CHECK(JsonReader::parse(R"({"a": {"x": 1}, "b": {"x": [[1, {"x": 2}], {"x": 3}]}})", "t").at("b").at("x").size() == 2);
  CHECK_THROWS_WITH_AS(JsonReader::parse(R"({"b": [[0], [{"x": 1, "x": 1}]]})", "t"),
                       "t: /b/1/0: the key 'x' is given twice", Error);
  CHECK_THROWS_WITH_AS(JsonReader::parse(R"({"x": 1, "x": 1})", "t"), "t: /: the key 'x' is given twice", Error);
}

TEST_CASE("calibration tables: a blend lies between the table taken alone and the one taken at once") {
  Calibration alone, together;
  alone.task_overhead_s = 10e-6;
  together.task_overhead_s = 30e-6;
  alone.layer_overhead_s = 2e-6;
  together.layer_overhead_s = 6e-6;
  together.copy_latency_s = 50e-6;
  together.concurrent = 4;
  alone.layers["fc"] = {1e-3, 2e-3, 3e-3, 4e-3, 1e-4};
  together.layers["fc"] = {3e-3, 4e-3, 7e-3, -1, 5e-4};  // no fused B measured at once
  alone.input_load_s = 8e-6;
  together.input_load_s = 16e-6;
  alone.kind_overhead_s[TaskKind::F] = 4e-6;     // timed apart alone only
  together.kind_overhead_s[TaskKind::B] = 20e-6;  // and at once only
  const Calibration quarter = blend_calibrations(alone, together, 0.25);
  CHECK(quarter.task_overhead_s == doctest::Approx(15e-6).scale(0));
  // Per kind, each table's own for that kind (its task_overhead_s where it has none).
  CHECK(quarter.task_overhead_s_of(TaskKind::F) == doctest::Approx(4e-6 + 0.25 * (30e-6 - 4e-6)).scale(0));
  CHECK(quarter.task_overhead_s_of(TaskKind::B) == doctest::Approx(10e-6 + 0.25 * (20e-6 - 10e-6)).scale(0));
  CHECK(quarter.task_overhead_s_of(TaskKind::BW) == doctest::Approx(15e-6).scale(0));
  CHECK(quarter.stage_kind_overhead_s.empty());  // timed over a stage in neither
  together.stage_kind_overhead_s[TaskKind::BA] = 2e-6;  // at once only: alone, the kind's (its task_overhead_s)
  CHECK(blend_calibrations(alone, together, 0.25).stage_task_overhead_s_of(TaskKind::BA) ==
        doctest::Approx(10e-6 + 0.25 * (2e-6 - 10e-6)).scale(0));
  together.stage_kind_overhead_s.clear();
  CHECK(quarter.layer_overhead_s == doctest::Approx(3e-6).scale(0));
  CHECK(quarter.input_load_s == doctest::Approx(10e-6).scale(0));
  CHECK(quarter.timed_footprint_bytes == 0);  // recorded in neither
  alone.timed_footprint_bytes = 1000;
  CHECK(blend_calibrations(alone, together, 0.25).timed_footprint_bytes == 0);  // in one only
  together.timed_footprint_bytes = 5000;
  CHECK(blend_calibrations(alone, together, 0.25).timed_footprint_bytes == 2000);
  const LayerTimes& fc = quarter.layers.at("fc");
  CHECK(fc.forward_s == doctest::Approx(1.5e-3).scale(0));
  CHECK(fc.activation_grad_s == doctest::Approx(2.5e-3).scale(0));
  CHECK(fc.weight_grad_s == doctest::Approx(4e-3).scale(0));
  CHECK(fc.backward_s == -1);  // BA + BW then, as in either table without it
  CHECK(fc.fused_backward_s() == doctest::Approx(6.5e-3).scale(0));
  CHECK(fc.update_s == doctest::Approx(2e-4).scale(0));
  CHECK(fc.to_linear_again_s(TaskKind::BA) == -1);  // measured in neither
  CHECK(fc.to_linear_again_s(TaskKind::BW) == -1);
  alone.layers["fc"].activation_grad_to_linear_again_s = 1e-3;
  alone.layers["fc"].weight_grad_to_linear_again_s = 3e-3;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").to_linear_again_s(TaskKind::BA) == -1);  // in one only
  together.layers["fc"].activation_grad_to_linear_again_s = 2e-3;
  const LayerTimes blended = blend_calibrations(alone, together, 0.25).layers.at("fc");
  CHECK(blended.to_linear_again_s(TaskKind::BA) == doctest::Approx(1.25e-3).scale(0));
  CHECK(blended.to_linear_again_s(TaskKind::BW) == -1);
  CHECK(blended.to_linear_again_s(TaskKind::F) == -1);  // no other kind goes back to a linear output
  CHECK(blended.activation_grad_fixed_s == -1);            // measured in neither
  alone.layers["fc"].activation_grad_fixed_s = 1e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").activation_grad_fixed_s == -1);  // in one only
  together.layers["fc"].activation_grad_fixed_s = 5e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").activation_grad_fixed_s == doctest::Approx(2e-4).scale(0));
  alone.layers["fc"].activation_grad_dx_one_layer_s = 1e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").activation_grad_dx_one_layer_s == -1);  // in one only
  together.layers["fc"].activation_grad_dx_one_layer_s = 9e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").activation_grad_dx_one_layer_s == doctest::Approx(3e-4).scale(0));
  CHECK(blended.assembly_s == -1);  // measured in neither
  alone.layers["fc"].assembly_s = 1e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").assembly_s == -1);  // in one only
  together.layers["fc"].assembly_s = 3e-4;
  CHECK(blend_calibrations(alone, together, 0.25).layers.at("fc").assembly_s == doctest::Approx(1.5e-4).scale(0));
  CHECK(quarter.task_gap_s == -1);  // the gap between tasks: measured in neither
  alone.task_gap_s = 2e-7;
  CHECK(blend_calibrations(alone, together, 0.25).task_gap_s == 2e-7);  // in one only: its
  together.task_gap_s = 6e-7;
  CHECK(blend_calibrations(alone, together, 0.25).task_gap_s == doctest::Approx(3e-7).scale(0));
  together.pipeline_copy_seconds = {{16384, 8e-7}};
  CHECK(blend_calibrations(alone, together, 0.25).pipeline_copy_seconds == together.pipeline_copy_seconds);
  CHECK(quarter.copy_latency_s == 50e-6);  // links and copies: the table taken at once
  CHECK(quarter.concurrent == 4);
  CHECK(blend_calibrations(alone, together, 0).layers.at("fc").forward_s == doctest::Approx(1e-3).scale(0));
  CHECK(blend_calibrations(alone, together, 1).layers.at("fc").weight_grad_s == doctest::Approx(7e-3).scale(0));
  CHECK_THROWS_WITH_AS(blend_calibrations(alone, together, 1.5), doctest::Contains("[0, 1]"), Error);
  CHECK_THROWS_AS(blend_calibrations(alone, together, std::nan("")), Error);
  together.layers["conv"] = {1e-3, 1e-3, 1e-3, 1e-3, 1e-3};
  CHECK_THROWS_WITH_AS(blend_calibrations(alone, together, 0.5), doctest::Contains("layer conv"), Error);
}

TEST_CASE("calibration tables: a table's compute times scaled, its links and copies kept") {
  Calibration c;
  c.task_overhead_s = 10e-6;
  c.layer_overhead_s = 2e-6;
  c.input_load_s = 8e-6;
  c.kind_overhead_s[TaskKind::BW] = 4e-6;
  c.copy_latency_s = 50e-6;
  c.copy_bytes_per_s = 1e9;
  c.layers["fc"] = {1e-3, 2e-3, 3e-3, -1, 1e-4};  // no fused B measured
  c.layers["fc"].weight_grad_to_linear_again_s = 5e-4;
  c.layers["fc"].activation_grad_fixed_s = 3e-4;
  c.layers["fc"].assembly_s = 1e-5;
  c.layers["fc"].forward_one_layer_s = 9e-4;
  c.layers["fc"].activation_grad_to_linear_one_layer_s = 4e-4;
  c.layers["fc"].weight_grad_dw_one_layer_s = 2.5e-3;
  c.layers["fc"].activation_grad_dx_one_layer_s = 1.5e-3;
  c.task_gap_s = 3e-7;
  const Calibration twice = with_compute_scaled(c, 2);
  CHECK(twice.task_gap_s == 3e-7);  // the executor's step between tasks, not compute
  CHECK(twice.task_overhead_s == doctest::Approx(20e-6).scale(0));
  CHECK(twice.layer_overhead_s == doctest::Approx(4e-6).scale(0));
  CHECK(twice.input_load_s == doctest::Approx(16e-6).scale(0));
  CHECK(twice.task_overhead_s_of(TaskKind::BW) == doctest::Approx(8e-6).scale(0));
  Calibration with_stage = c;
  with_stage.stage_kind_overhead_s[TaskKind::BA] = 1e-6;
  CHECK(with_compute_scaled(with_stage, 2).stage_task_overhead_s_of(TaskKind::BA) == doctest::Approx(2e-6).scale(0));
  const LayerTimes& fc = twice.layers.at("fc");
  CHECK(fc.forward_s == doctest::Approx(2e-3).scale(0));
  CHECK(fc.activation_grad_s == doctest::Approx(4e-3).scale(0));
  CHECK(fc.weight_grad_s == doctest::Approx(6e-3).scale(0));
  CHECK(fc.update_s == doctest::Approx(2e-4).scale(0));
  CHECK(fc.backward_s == -1);  // not measured stays so
  CHECK(fc.to_linear_again_s(TaskKind::BA) == -1);
  CHECK(fc.to_linear_again_s(TaskKind::BW) == doctest::Approx(1e-3).scale(0));
  CHECK(fc.activation_grad_fixed_s == doctest::Approx(6e-4).scale(0));
  CHECK(fc.assembly_s == doctest::Approx(2e-5).scale(0));
  CHECK(fc.forward_one_layer_s == doctest::Approx(1.8e-3).scale(0));
  CHECK(fc.activation_grad_to_linear_one_layer_s == doctest::Approx(8e-4).scale(0));
  CHECK(fc.weight_grad_dw_one_layer_s == doctest::Approx(5e-3).scale(0));
  CHECK(fc.activation_grad_dx_one_layer_s == doctest::Approx(3e-3).scale(0));
  CHECK(twice.copy_latency_s == 50e-6);
  CHECK(twice.copy_bytes_per_s == 1e9);
  CHECK_THROWS_AS(with_compute_scaled(c, 0), Error);
  CHECK_THROWS_AS(with_compute_scaled(c, std::nan("")), Error);
}

TEST_CASE("calibration tables: a B costs the measured fused backward, or BA + BW where the table has none") {
  const std::string split = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 3e-6, "BW_s": 5e-6, "U_s": 1e-7})";
  const std::string fused = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 3e-6, "BW_s": 5e-6, "B_s": 6e-6, "U_s": 1e-7})";
  Layer layer;
  layer.name = "fc1";
  const Calibration without_b = calibration_from_json_text(calibration("", split), "c.json");  // samples: 4
  const Calibration with_b = calibration_from_json_text(calibration("", fused), "c.json");
  CHECK(calibrated_seconds(without_b, layer, TaskKind::B, 4) == doctest::Approx(8e-6).scale(0));
  CHECK(calibrated_seconds(with_b, layer, TaskKind::B, 4) == doctest::Approx(6e-6).scale(0));
  CHECK(calibrated_seconds(with_b, layer, TaskKind::B, 8) == doctest::Approx(12e-6).scale(0));  // linear in samples
  CHECK(calibrated_seconds(with_b, layer, TaskKind::BA, 4) == doctest::Approx(3e-6).scale(0));
  // Written and read back, the fused time stays; -1 (not measured) is allowed, other negatives are not.
  CHECK(calibration_from_json_text(calibration_to_json_text(with_b), "c.json").layers.at("fc1").backward_s == 6e-6);
  CHECK(calibration_from_json_text(calibration_to_json_text(without_b), "c.json").layers.at("fc1").backward_s == -1);
  CHECK_THROWS_WITH_AS(
      calibration_from_json_text(calibration("", R"({"name": "fc1", "F_s": 0, "BA_s": 0, "BW_s": 0, "B_s": -2, "U_s": 0})"), "c.json"),
      doctest::Contains("/layers/0/B_s: expected seconds >= 0, or -1 for not measured"), Error);
  // The way back to the linear output taken again: absent (older tables) is -1, not measured, and
  // a table writes it only where it was measured.
  CHECK(with_b.layers.at("fc1").to_linear_again_s(TaskKind::BA) == -1);
  CHECK(calibration_to_json_text(with_b).find("to_linear_again_s") == std::string::npos);
  const std::string again = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 3e-6, "BW_s": 5e-6, "B_s": 6e-6, "U_s": 1e-7,)"
                            R"( "BA_to_linear_again_s": 1.5e-6, "BW_to_linear_again_s": 1e-6})";
  const Calibration with_again = calibration_from_json_text(calibration("", again), "c.json");
  CHECK(with_again.layers.at("fc1").to_linear_again_s(TaskKind::BA) == 1.5e-6);
  CHECK(with_again.layers.at("fc1").to_linear_again_s(TaskKind::BW) == 1e-6);
  const Calibration written = calibration_from_json_text(calibration_to_json_text(with_again), "c.json");
  CHECK(written.layers.at("fc1").to_linear_again_s(TaskKind::BA) == 1.5e-6);
  CHECK(written.layers.at("fc1").to_linear_again_s(TaskKind::BW) == 1e-6);
  CHECK_THROWS_WITH_AS(
      calibration_from_json_text(calibration("", R"({"name": "fc1", "F_s": 0, "BA_s": 0, "BW_s": 0, "U_s": 0, "BW_to_linear_again_s": -3})"), "c.json"),
      doctest::Contains("/layers/0/BW_to_linear_again_s: expected seconds >= 0, or -1 for not measured"), Error);
  // What a BA part costs whatever its samples, the gradient assembled at a layer's output and a
  // forward alone in its task: likewise absent (-1) in older tables, written only where measured, and read back as written.
  const auto optional_layer_time = [&](const std::string& key, double LayerTimes::*field) {
    CAPTURE(key);
    CHECK(with_again.layers.at("fc1").*field == -1);
    CHECK(calibration_to_json_text(with_again).find(key) == std::string::npos);
    const std::string measured = R"({"name": "fc1", "F_s": 1e-6, "BA_s": 3e-6, "BW_s": 5e-6, "B_s": 6e-6, "U_s": 1e-7, ")" + key + R"(": 4e-7})";
    const Calibration with = calibration_from_json_text(calibration("", measured), "c.json");
    CHECK(with.layers.at("fc1").*field == 4e-7);
    CHECK(calibration_from_json_text(calibration_to_json_text(with), "c.json").layers.at("fc1").*field == 4e-7);
    const std::string bad = R"({"name": "fc1", "F_s": 0, "BA_s": 0, "BW_s": 0, "U_s": 0, ")" + key + R"(": -2})";
    const std::string said = "/layers/0/" + key + ": expected seconds >= 0, or -1 for not measured";
    CHECK_THROWS_WITH_AS(calibration_from_json_text(calibration("", bad), "c.json"), doctest::Contains(said.c_str()), Error);
  };
  optional_layer_time("BA_fixed_s", &LayerTimes::activation_grad_fixed_s);
  optional_layer_time("assembly_s", &LayerTimes::assembly_s);
  optional_layer_time("F_one_layer_s", &LayerTimes::forward_one_layer_s);
  optional_layer_time("BW_dW_one_layer_s", &LayerTimes::weight_grad_dw_one_layer_s);
  optional_layer_time("BA_dx_one_layer_s", &LayerTimes::activation_grad_dx_one_layer_s);
  optional_layer_time("BA_to_linear_one_layer_s", &LayerTimes::activation_grad_to_linear_one_layer_s);
}
