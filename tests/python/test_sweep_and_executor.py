"""sweep() in worker processes gives what serial runs give; the CPU executor from Python."""
import math
import os
import signal
import threading

import pytest

import pipetwin


def test_parallel_sweep_equals_serial():
    args = dict(model="resnet20", schedules=["gpipe", "1f1b", "pipedream", "pipefb"], processors=[1, 2, 4])
    parallel = pipetwin.sweep(**args, jobs=2)
    serial = pipetwin.sweep(**args, jobs=1)
    assert parallel.equals(serial)  # NaN speedups in the same places count as equal
    assert list(parallel.columns) == pipetwin._core.sweep_columns()  # the CLI's --csv columns
    gpipe = parallel[parallel.schedule == "gpipe"].set_index("processors")
    assert gpipe.loc[1, "speedup"] == 1.0 and gpipe.loc[4, "speedup"] > 1.0
    pipefb_one = parallel[(parallel.schedule == "pipefb") & (parallel.processors == 1)].iloc[0]
    assert "even" in pipefb_one["error"] and math.isnan(pipefb_one["speedup"])


def test_sweep_routes_schedule_parameters_only_to_their_schedules():
    frame = pipetwin.sweep("resnet20", ["gpipe", "layerwise-merge"], [2], params={"tolerance": 0.1}, jobs=1)
    assert list(frame["error"]) == ["", ""]


def test_sweep_rejects_a_schedule_or_processor_count_given_twice():
    with pytest.raises(pipetwin.PipetwinError, match="processor count 2 is given twice"):
        pipetwin.sweep("resnet20", ["gpipe"], [1, 2, 2], jobs=1)
    with pytest.raises(pipetwin.PipetwinError, match="schedule gpipe is given twice"):
        pipetwin.sweep("resnet20", ["gpipe", "1f1b", "gpipe"], [1], jobs=1)


@pytest.mark.parametrize("schedules, processors, message", [
    (["gpipe"], [], "no processor counts given"),
    ([], [1], "no schedules given"),
    (["gpipe"], [0], "processor counts must be 1 to 4096, got 0"),
    (["gpipe"], [10**12], "processor counts must be 1 to 4096, got 1000000000000"),
])
def test_sweep_refuses_what_gives_no_rows_or_a_count_no_graph_can_have(schedules, processors, message):
    with pytest.raises(pipetwin.PipetwinError, match=message):
        pipetwin.sweep("lenet5", schedules, processors, jobs=1)


def test_profile_refuses_an_output_it_cannot_write_before_it_profiles(tmp_path):
    # The data folder is empty, so profiling would fail on the data: the output is checked first.
    with pytest.raises(pipetwin.PipetwinError, match="is a directory, not a file"):
        pipetwin.profile("lenet5", data="fashion-mnist", data_dir=tmp_path / "empty", output=tmp_path)


def test_sweep_refuses_a_negative_number_of_workers():
    with pytest.raises(pipetwin.PipetwinError, match="jobs must be at least 1, or 0 or None for every core; got -1"):
        pipetwin.sweep("lenet5", ["gpipe"], [1, 2], jobs=-1)


def test_training_from_python_reduces_the_loss_and_reports_the_schedule_it_ran():
    t = pipetwin.run(model="mlp", schedule="1f1b", processors=2, microbatches=2, minibatches=40,
                     params={"widths": "32,16,8", "batch": 16}, data="synthetic", learning_rate=0.1)
    assert t.result.engine == "cpu"
    assert t.result.graph.schedule == "1f1b" and len(t.result.peak_memory_bytes) == 2
    early, late = sum(t.minibatch_loss[:5]), sum(t.minibatch_loss[-5:])
    assert late < early
    assert [w.size for w in t.weights()] == [32 * 16 + 16, 16 * 8 + 8]
    assert t.test_accuracy is None
    # Tensors come from the processors' pools: 40 minibatches make far more tensors than the first
    # step allocates.
    assert t.host_tensors_allocated > 0
    assert t.host_tensors_reused > 20 * t.host_tensors_allocated


def test_profile_of_copies_at_once(tmp_path):
    alone = pipetwin.profile("mlp", params={"widths": "32,16,8", "batch": 8}, data="synthetic", repeats=4)
    two = pipetwin.profile("mlp", params={"widths": "32,16,8", "batch": 8}, data="synthetic", repeats=4, concurrent=2,
                           output=tmp_path / "two.json")
    assert alone["concurrent"] == 1 and two["concurrent"] == 2
    # Timed in a 2-processor pipeline by default; as two copies at once when asked.
    assert two["pipeline_schedule"] == "1f1b" and "pipeline_schedule" not in alone
    copies = pipetwin.profile("mlp", params={"widths": "32,16,8", "batch": 8}, data="synthetic", repeats=4, concurrent=2,
                              concurrent_timing="copies")
    assert copies["concurrent"] == 2 and "pipeline_schedule" not in copies
    assert [layer["name"] for layer in two["layers"]] == [layer["name"] for layer in alone["layers"]]
    assert two["task_overhead_s"] >= 0 and two["layer_overhead_s"] >= 0
    # Overheads fitted from unmarked twins of the timed runs, when asked, and said so.
    twins = pipetwin.profile("mlp", params={"widths": "32,16,8", "batch": 8}, data="synthetic", repeats=4,
                             unmarked_twins=True)
    assert twins["overheads_from_unmarked_twins"] is True and "overheads_from_unmarked_twins" not in alone
    graph = pipetwin.build_graph("mlp", "1f1b", "cpu-core", 2, 4, 2, params={"widths": "32,16,8", "batch": 8},
                                 calibration=str(tmp_path / "two.json"))
    assert pipetwin.simulate(graph).iteration_s > 0
    # The CPU profile's wait curve (waits ascending, charges never falling) goes into the graph in its
    # cycles, and every processor task carries the bytes it is charged for.
    curve = two["wait_extra_s_per_byte"]
    assert [w for w, _ in curve] == sorted(w for w, _ in curve) and len(curve) == 4
    assert all(a[1] <= b[1] for a, b in zip(curve, curve[1:]))
    assert [w for w, _ in graph.wait_loss] == [round(w * graph.clock_hz) for w, _ in curve]
    tasks = graph.tasks()
    on_processors = [b for b, p in zip(tasks["wait_exposed_bytes"], tasks["placement"]) if p == "processor"]
    assert on_processors and min(on_processors) > 0


def test_validate_ties_schedules_that_run_one_program():
    table, summary = pipetwin.validate("mlp", ["sequential", "1f1b"], [1], minibatches=4, runs=1,
                                       params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    assert summary["same_program_schedules"] == {"1": [["sequential", "1f1b"]]}
    assert table["predicted_step_s"].iloc[0] == table["predicted_step_s"].iloc[1]
    assert summary["kendall_tau"][1] != summary["kendall_tau"][1]  # tied both ways: NaN, no order at all


def test_validate_from_python_and_its_plot():
    table, summary = pipetwin.validate("mlp", ["gpipe", "1f1b"], [1, 2], minibatches=4, runs=1,
                                       params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    assert list(table["processors"]) == [1, 2, 1, 2]
    assert (table["measured_step_s"] > 0).all() and (table["predicted_step_s"] > 0).all()
    errors = (table["predicted_step_s"] - table["measured_step_s"]) / table["measured_step_s"]
    assert summary["mean_abs_step_error"] == pytest.approx(errors.abs().mean())
    assert set(summary["kendall_tau"]) == {1, 2}
    assert summary["same_program_schedules"] == {}  # gpipe and 1f1b differ at both counts
    assert (table["footprint_factor"] > 0).all()
    assert ((table["stash_far_share"] >= 0) & (table["stash_far_share"] <= 1)).all()
    # Profiled here: a table per processor count (two copies at once for P = 2) in the one round,
    # and each run replayed from its own task times.
    assert summary["calibrations"] == 2
    for tau in summary["separable_kendall_tau"].values():  # one run: no pair's order is known
        assert tau["pairs"] == 0 and tau["of"] == 1
    for p in (1, 2):  # one pair at each P, its place in the counts from the table's own steps
        rows = table[table["processors"] == p]
        predicted_gap = rows["predicted_step_s"].iloc[0] - rows["predicted_step_s"].iloc[1]
        measured_gap = rows["measured_step_s"].iloc[0] - rows["measured_step_s"].iloc[1]
        expected = ("predicted_equal" if predicted_gap == 0 else "measured_equal" if measured_gap == 0
                    else "in_order" if predicted_gap * measured_gap > 0 else "against")
        order = summary["pair_order"][str(p)]
        assert order[expected] == 1
        assert sum(order[k] for k in ("in_order", "against", "predicted_equal", "measured_equal")) == 1
    assert set(summary["co_run_slowdown"]) == {"2"}
    replays = table["replayed_step_s"] / table["measured_step_s"] - 1
    assert list(table["replay_error"]) == pytest.approx(list(replays))
    assert summary["mean_abs_replay_error"] == pytest.approx(replays.abs().mean())
    # One round: a speedup error is its predicted speedup over its measured one; the baselines'
    # own rows (P = 1) have none and stay out of the mean.
    two = table[table["processors"] == 2]
    speedup_errors = two["predicted_speedup"] / two["measured_speedup"] - 1
    assert list(two["speedup_error"]) == pytest.approx(list(speedup_errors))
    assert summary["mean_abs_speedup_error"] == pytest.approx(speedup_errors.abs().mean())
    assert (table[table["processors"] == 1]["speedup_error"] == 0).all()
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from pipetwin import plotting
    ax = plotting.predicted_vs_measured(table)
    assert len(ax.collections) == 2  # one point set per schedule


def test_validate_warms_up_with_rounds_it_does_not_keep():
    table, summary = pipetwin.validate("mlp", "gpipe", [1, 2], minibatches=4, runs=1, warmup_rounds=1,
                                       params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    assert summary["rounds"] == 1  # the kept one
    assert summary["calibrations"] == 4  # a table per processor count in each of the two rounds
    assert all(len(rounds) == 1 for rounds in table["measured_rounds_s"])
    with pytest.raises(pipetwin.PipetwinError, match="warmup_rounds must be 0 or more"):
        pipetwin.validate("mlp", "gpipe", [1], runs=1, warmup_rounds=-1, data="synthetic")


def test_validate_cut_short_returns_the_rounds_done():
    args = dict(minibatches=4, params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    # A limit no round fits in: the first round is taken all the same.
    table, summary = pipetwin.validate("mlp", "gpipe", [1, 2], runs=50, time_limit_s=1e-3, **args)
    assert summary["rounds"] == 1 and summary["stopped_early"] is True
    assert all(len(rounds) == 1 for rounds in table["measured_rounds_s"])
    _, whole = pipetwin.validate("mlp", "gpipe", [1], runs=2, **args)
    assert whole["rounds"] == 2 and whole["stopped_early"] is False
    # An interrupt while it runs: a warning, not KeyboardInterrupt, and the rounds done.
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.warns(RuntimeWarning, match="interrupted: the rounds done are returned"):
            _, interrupted = pipetwin.validate("mlp", "gpipe", [1, 2], runs=500, **args)
    finally:
        timer.cancel()
    assert interrupted["stopped_early"] is True and 1 <= interrupted["rounds"] < 500
    with pytest.raises(pipetwin.PipetwinError, match="time_limit_s must be 0 or more"):
        pipetwin.validate("mlp", "gpipe", [1], runs=1, time_limit_s=-1, **args)


def test_validate_predicts_step_peaks_over_the_processors_phases():
    args = dict(minibatches=4, runs=1, params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    # By default each row's table's task spread: a fraction, the peak at least the simulated timing's.
    table, _ = pipetwin.validate("mlp", "pipedream", [1, 2], **args)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    for row in rows:
        assert 0 <= row["peak_phase"] < 1
        assert row["predicted_step_peak_memory_bytes"] >= row["predicted_nominal_step_peak_memory_bytes"] > 0
    # 0: the simulated timing alone.
    table, _ = pipetwin.validate("mlp", "pipedream", [1, 2], peak_phase=0.0, **args)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    for row in rows:
        assert row["peak_phase"] == 0
        assert row["predicted_step_peak_memory_bytes"] == row["predicted_nominal_step_peak_memory_bytes"]
    with pytest.raises(pipetwin.PipetwinError, match="peak_phase must be a fraction from 0 to below 1"):
        pipetwin.validate("mlp", "pipedream", [1], peak_phase=1.0, **args)


def test_validate_reads_the_machine_beside_every_calibration_and_run():
    args = dict(minibatches=4, runs=2, params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    table, summary = pipetwin.validate("mlp", "gpipe", [1, 2], **args)
    state = summary["machine_state"]
    # Two readings for each kept calibration (2 rounds, P = 1 and 2) and each run (2 rounds, two
    # configurations), and two more for each try taken again (a table judged off its peers
    # included, though two rounds are too few to judge one by).
    assert summary["retaken_tables"] == summary["kept_off_tables"] == {}
    taken = (summary["calibrations"] + 2 * 2 + state["retaken_calibrations"] + state["retaken_runs"] +
             sum(summary["retaken_tables"].values()))
    assert state["readings"] == 2 * taken
    assert state["tolerance"] == pytest.approx(0.06)
    assert len(state["usual_s"]) == min(8, len(os.sched_getaffinity(0))) and min(state["usual_s"]) > 0  # every CPU
    assert 0 <= state["off_fraction"] <= 1
    _, unread = pipetwin.validate("mlp", "gpipe", [1, 2], machine_tolerance=0, **args)
    assert "machine_state" not in unread
    with pytest.raises(pipetwin.PipetwinError, match="machine_retakes must be 0 or more"):
        pipetwin.validate("mlp", "gpipe", [1], machine_retakes=-1, **args)
    with pytest.raises(pipetwin.PipetwinError, match="co_run_tolerance must be 0 or more"):
        pipetwin.validate("mlp", "gpipe", [1], co_run_tolerance=-0.5, **args)
    with pytest.raises(pipetwin.PipetwinError, match="table_tolerance must be 0 or more"):
        pipetwin.validate("mlp", "gpipe", [1], table_tolerance=-0.5, **args)


def test_tensor_parallel_training_from_python_matches_the_unsplit_network():
    args = dict(model="mlp", schedule="1f1b", microbatches=2, minibatches=6, data="synthetic", learning_rate=0.1)
    plain = pipetwin.run(processors=2, params={"widths": "32,16,12,8", "batch": 16}, **args)
    split = pipetwin.run(processors=4, params={"widths": "32,16,12,8", "batch": 16, "tp": 2}, **args)
    assert len(split.result.peak_memory_bytes) == 2  # two groups of two ranks
    for a, b in zip(plain.weights(), split.weights()):
        assert abs(a - b).max() <= 1e-5 * max(1.0, abs(a).max())
