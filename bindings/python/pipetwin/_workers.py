"""Runs independent configurations (one call of a core function each) in worker processes, here,
or on a Dask cluster: what sweep() and search() share. SystemC's kernel is one per process, so
parallel simulations need processes, not threads."""
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, TypeVar

from ._core import PipetwinError

Job = TypeVar("Job")


def run_jobs(one: Callable[[Job], str], jobs: Sequence[Job], workers: Optional[int] = None,
             client: Any = None) -> List[str]:
    """`one(job)` for every job, in order: on `client` (a dask.distributed Client) when given, else
    in `workers` processes (None or 0: all cores; 1 runs here)."""
    if client is not None:
        return list(client.gather(client.map(one, list(jobs), pure=False)))
    if workers is not None and workers < 0:
        raise PipetwinError(f"jobs must be at least 1, or 0 or None for every core; got {workers}")
    count = workers or os.cpu_count() or 1
    if count <= 1 or len(jobs) <= 1:
        return [one(j) for j in jobs]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(one, jobs, chunksize=max(1, len(jobs) // (4 * count))))
