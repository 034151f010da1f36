"""Schedules x processor counts, each configuration predicted in a worker process (SystemC's kernel
is one per process, so parallel simulations need processes), returned as one table. What a row
holds and what speedup means come from the core (pipetwin/sim/sweep.hpp), as for `pipetwin sweep`:
speedup = the baseline schedule's (default: sequential) steady-state iteration time at P = 1 (one
replica) over the row's, times the row's data-parallel replicas."""
import json
import os
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _core
from ._api import Params, PathArg, Table, _params, default_engine, frame
from ._checks import checked
from ._workers import run_jobs

_Job = Tuple[str, str, str, str, int, int, int, Any, str]


def _one(job: _Job) -> str:
    engine, model, schedule, hardware, processors, microbatches, minibatches, params, calibration = job
    return _core.sweep_row(engine, model, schedule, hardware, processors, microbatches, minibatches, params,
                           calibration)


@checked
def sweep(model: PathArg = "resnet56", schedules: Union[str, Sequence[str]] = "all",
          processors: Sequence[int] = (1, 2, 4, 8), *, hardware: PathArg = "h100", microbatches: int = 8,
          minibatches: int = 2, params: Params = None, calibration: PathArg = "", engine: Optional[str] = None,
          baseline: Optional[str] = "sequential", jobs: Optional[int] = None) -> Table:
    """Predicts every schedule at every processor count, in `jobs` worker processes (default: all
    cores; 1 runs here), and returns a DataFrame (a list of dicts without pandas) with one row per
    configuration and the columns of `pipetwin sweep --csv`: iteration_s, speedup over `baseline`
    at P = 1 (None: no speedups), utilization, bubble, peak memory, link bytes; configurations that
    cannot be built say why in `error`. Schedule parameters that only some schedules take go only
    to those."""
    if schedules == "all":
        names = [s["name"] for s in _core.schedules() if s["standalone"]]
    else:
        names = [schedules] if isinstance(schedules, str) else list(schedules)
    engine = engine or default_engine()
    points = _core.sweep_points(names, [int(p) for p in processors], baseline or "")
    jobs_list: List[_Job] = [(engine, os.fspath(model), s, os.fspath(hardware), p, microbatches, minibatches, _params(params),
                              os.fspath(calibration)) for s, p in points]
    rows = run_jobs(_one, jobs_list, jobs)
    table = json.loads(_core.finish_sweep(rows, baseline or ""))
    for row in table:
        if row["speedup"] is None:
            row["speedup"] = float("nan")
    out: Table = frame(table)
    return out
