"""Schedules x processor counts, each configuration predicted in a worker process (SystemC's kernel
is one per process, so parallel simulations need processes), returned as one table. What a row
holds and what speedup means come from the core (pipetwin/sim/sweep.hpp), as for `pipetwin sweep`:
speedup = the baseline schedule's (default: sequential) steady-state iteration time at P = 1 over
the row's."""
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from . import _core
from ._api import _frame, default_engine


def _one(job):
    engine, model, schedule, hardware, processors, microbatches, minibatches, params, calibration = job
    return _core.sweep_row(engine, model, schedule, hardware, processors, microbatches, minibatches, params,
                           calibration)


def sweep(model="resnet56", schedules="all", processors=(1, 2, 4, 8), *, hardware="h100", microbatches=8,
          minibatches=2, params=None, calibration="", engine=None, baseline="sequential", jobs=None):
    """Predicts every schedule at every processor count, in `jobs` worker processes (default: all
    cores; 1 runs here), and returns a DataFrame (a list of dicts without pandas) with one row per
    configuration and the columns of `pipetwin sweep --csv`: iteration_s, speedup over `baseline`
    at P = 1 (None: no speedups), utilization, bubble, peak memory, link bytes; configurations that
    cannot be built say why in `error`. Schedule parameters that only some schedules take go only
    to those."""
    if schedules == "all":
        schedules = [s["name"] for s in _core.schedules() if s["standalone"]]
    elif isinstance(schedules, str):
        schedules = [schedules]
    engine = engine or default_engine()
    params = dict(params or {})
    points = _core.sweep_points(list(schedules), [int(p) for p in processors], baseline or "")
    jobs_list = [(engine, model, s, hardware, p, microbatches, minibatches, params, str(calibration))
                 for s, p in points]
    workers = jobs or os.cpu_count() or 1
    if workers <= 1 or len(jobs_list) <= 1:
        rows = [_one(j) for j in jobs_list]
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
            rows = list(pool.map(_one, jobs_list, chunksize=max(1, len(jobs_list) // (4 * workers))))
    table = json.loads(_core.finish_sweep(rows, baseline or ""))
    for row in table:
        if row["speedup"] is None:
            row["speedup"] = float("nan")
    return _frame(table)
