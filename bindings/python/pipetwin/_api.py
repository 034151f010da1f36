"""The notebook-facing API around the C++ core: simulate / evaluate / run a graph or a configuration
given by keywords, profile and validate on the CPU executor, tables as pandas DataFrames when
pandas is installed."""
import json
import os

from . import _core
from ._core import Graph, PipetwinError

_CONFIG_KEYS = ("model", "schedule", "hardware", "processors", "microbatches", "minibatches", "params", "calibration")


def default_engine():
    """systemc when the simulator was built, else analytic."""
    return "systemc" if _core.HAVE_SYSTEMC else "analytic"


def _graph(graph, config, defaults=None):
    if graph is not None and config:
        raise TypeError("give a Graph or configuration keywords (model=..., schedule=...), not both")
    if graph is None:
        unknown = sorted(set(config) - set(_CONFIG_KEYS))
        if unknown:
            raise TypeError(f"unknown keyword(s) {', '.join(unknown)}; configuration keywords are "
                            f"{', '.join(_CONFIG_KEYS)}")
        return _core.build_graph(**{**(defaults or {}), **config})
    if not isinstance(graph, Graph):
        raise TypeError(f"expected a pipetwin.Graph, got {type(graph).__name__}")
    return graph


def simulate(graph=None, *, engine=None, memory_timeline=False, **config):
    """Predicts a Result: simulate(graph), or simulate(model=..., schedule=..., hardware=...,
    processors=..., microbatches=..., minibatches=..., params={...}, calibration=path).
    engine: 'systemc' (default when built) or 'analytic'."""
    return _core.run_engine(_graph(graph, config), engine or default_engine(), memory_timeline)


def evaluate(graph=None, *, memory_timeline=False, **config):
    """The analytic evaluator's Result (no bandwidth sharing): same arguments as simulate()."""
    return _core.run_engine(_graph(graph, config), "analytic", memory_timeline)


def _check_device(device):
    if device == "cpu":
        return
    if device == "cuda":
        raise PipetwinError("device='cuda': the CUDA executor is not part of this build yet; use device='cpu'")
    raise PipetwinError(f"device must be 'cpu' or 'cuda', got {device!r}")


def run(graph=None, *, device="cpu", data="auto", data_dir="/usr/share/datasets/fashion-mnist",
        learning_rate=0.05, momentum=0.0, seed=1, test=False, memory_timeline=False, **config):
    """Trains for real under the schedule (CPU threads as processors) and returns a TrainingResult:
    .result (measured, the simulator's schema), .minibatch_loss, .test_accuracy (test=True).
    Configuration keywords as simulate(); hardware defaults to cpu-core."""
    _check_device(device)
    g = _graph(graph, config, {"hardware": "cpu-core", "model": "lenet5", "microbatches": 4})
    return _core.train(g, data=data, data_dir=data_dir, learning_rate=learning_rate, momentum=momentum, seed=seed,
                       test=test, memory_timeline=memory_timeline)


def profile(model, *, device="cpu", microbatches=4, params=None, data="auto",
            data_dir="/usr/share/datasets/fashion-mnist", repeats=16, seed=1, output=None):
    """Times F, BA, BW and U of every layer on one processor; returns the calibration table (a dict)
    and writes it to `output` when given (use it as calibration=path)."""
    _check_device(device)
    text = _core.profile(model, microbatches=microbatches, params=params, data=data, data_dir=data_dir,
                         repeats=repeats, seed=seed)
    if output is not None:
        _core.write_output_file(os.fspath(output), text)
    return json.loads(text)


def validate(model, schedules, processors=(1, 2), *, device="cpu", microbatches=4, minibatches=16, params=None,
             calibration="", engine=None, runs=5, data="auto", data_dir="/usr/share/datasets/fashion-mnist",
             learning_rate=0.05, seed=1):
    """Predicted (from a calibration table; profiled first without one) against measured step time,
    speedup and peak memory per schedule and processor count. Returns (table, summary): the table a
    DataFrame when pandas is installed (else a list of dicts), the summary a dict with
    mean_abs_step_error, max_abs_step_error and kendall_tau per processor count."""
    _check_device(device)
    if isinstance(schedules, str):
        schedules = [schedules]
    report = _core.validate(model, list(schedules), [int(p) for p in processors], microbatches=microbatches,
                            minibatches=minibatches, params=params, calibration=str(calibration),
                            engine=engine or default_engine(), runs=runs, data=data, data_dir=data_dir,
                            learning_rate=learning_rate, seed=seed)
    summary = {k: report[k] for k in ("mean_abs_step_error", "max_abs_step_error", "kendall_tau")}
    return _frame(report["rows"]), summary


def task_frame(result):
    """The per-task table of a Result (kinds, layers, placement, start and end cycles) as a DataFrame,
    or as a dict of numpy columns without pandas."""
    return _frame(result.task_times())


def _frame(table):
    try:
        import pandas
    except ImportError:
        return table
    return pandas.DataFrame(table)
