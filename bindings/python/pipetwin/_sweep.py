"""Schedules x processor counts, simulated in worker processes (SystemC's kernel is one per
process, so parallel simulations need processes), returned as one table."""
import itertools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from . import _core
from ._api import _frame, default_engine


def _one(job):
    model, schedule, hardware, processors, microbatches, minibatches, params, calibration, engine = job
    row = {"model": model, "schedule": schedule, "hardware": hardware, "processors": processors,
           "microbatches": microbatches, "minibatches": minibatches}
    try:
        graph = _core.build_graph(model=model, schedule=schedule, hardware=hardware, processors=processors,
                                  microbatches=microbatches, minibatches=minibatches, params=params,
                                  calibration=calibration, drop_other_schedules_params=True)
        r = _core.run_engine(graph, engine, False)
    except _core.PipetwinError as e:
        row["error"] = str(e)
        return row
    row.update({"iteration_s": r.iteration_s, "iteration_cycles": r.iteration_cycles, "total_s": r.total_s,
                "mean_utilization": r.mean_utilization, "bubble_fraction": r.bubble_fraction,
                "peak_memory_bytes": max(r.peak_memory_bytes), "link_bytes": sum(r.link_bytes),
                "out_of_memory": bool(r.out_of_memory), "error": ""})
    return row


def sweep(model="resnet56", schedules="all", processors=(1, 2, 4, 8), *, hardware="h100", microbatches=8,
          minibatches=2, params=None, calibration="", engine=None, jobs=None):
    """Simulates every schedule at every processor count, in `jobs` worker processes (default: all
    cores; 1 runs here), and returns a DataFrame (a list of dicts without pandas) with one row per
    configuration: iteration_s, speedup over the same schedule at the smallest P, utilization,
    bubble, peak memory, link bytes; configurations that cannot be built say why in `error`.
    Schedule parameters that only some schedules take go only to those."""
    if schedules == "all":
        schedules = [s["name"] for s in _core.schedules() if s["standalone"]]
    elif isinstance(schedules, str):
        schedules = [schedules]
    known = {s["name"] for s in _core.schedules()}
    for name in schedules:
        if name not in known:
            _core.build_graph(schedule=name)  # raises PipetwinError with a suggestion
    engine = engine or default_engine()
    params = dict(params or {})
    jobs_list = [(model, s, hardware, int(p), microbatches, minibatches, params, str(calibration), engine)
                 for s, p in itertools.product(schedules, processors)]
    workers = jobs or os.cpu_count() or 1
    if workers <= 1 or len(jobs_list) <= 1:
        rows = [_one(j) for j in jobs_list]
    else:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
            rows = list(pool.map(_one, jobs_list, chunksize=max(1, len(jobs_list) // (4 * workers))))
    base = {}
    for row in rows:
        if not row.get("error"):
            key = row["schedule"]
            if key not in base or row["processors"] < base[key]["processors"]:
                base[key] = row
    for row in rows:
        b = base.get(row["schedule"])
        row["speedup"] = b["iteration_s"] / row["iteration_s"] if b and not row.get("error") else float("nan")
    return _frame(rows)
