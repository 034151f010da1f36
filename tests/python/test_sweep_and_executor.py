"""sweep() in worker processes gives what serial runs give; the CPU executor from Python."""
import math

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


def test_training_from_python_reduces_the_loss_and_reports_the_schedule_it_ran():
    t = pipetwin.run(model="mlp", schedule="1f1b", processors=2, microbatches=2, minibatches=40,
                     params={"widths": "32,16,8", "batch": 16}, data="synthetic", learning_rate=0.1)
    assert t.result.engine == "cpu"
    assert t.result.graph.schedule == "1f1b" and len(t.result.peak_memory_bytes) == 2
    early, late = sum(t.minibatch_loss[:5]), sum(t.minibatch_loss[-5:])
    assert late < early
    assert [w.size for w in t.weights()] == [32 * 16 + 16, 16 * 8 + 8]
    assert t.test_accuracy is None


def test_validate_from_python_and_its_plot():
    table, summary = pipetwin.validate("mlp", ["gpipe", "1f1b"], [1, 2], minibatches=4, runs=1,
                                       params={"widths": "32,16,8", "batch": 8}, data="synthetic")
    assert list(table["processors"]) == [1, 2, 1, 2]
    assert (table["measured_step_s"] > 0).all() and (table["predicted_step_s"] > 0).all()
    errors = (table["predicted_step_s"] - table["measured_step_s"]) / table["measured_step_s"]
    assert summary["mean_abs_step_error"] == pytest.approx(errors.abs().mean())
    assert set(summary["kendall_tau"]) == {1, 2}
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from pipetwin import plotting
    ax = plotting.predicted_vs_measured(table)
    assert len(ax.collections) == 2  # one point set per schedule
