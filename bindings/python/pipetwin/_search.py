"""The parallel-configuration search, as `pipetwin search`: for a model, a GPU count and a global
batch, every (tensor-parallel tp, pipeline pp, data-parallel dp, microbatch size, schedule) with
tp x pp x dp = the GPUs, each predicted in a worker process (or on a Dask cluster), ranked by
predicted iteration time among those that fit in memory. The candidates, rows and ranking come from
the core (pipetwin/sim/search.hpp)."""
import json
import os
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _core
from ._api import Params, PathArg, Table, _params, default_engine, frame
from ._checks import checked
from ._workers import run_jobs

_Job = Tuple[str, str, str, str, int, int, int, List[str]]


def _one(job: _Job) -> str:
    engine, model, schedule, hardware, processors, microbatches, minibatches, params = job
    return _core.search_row(engine, model, schedule, hardware, processors, microbatches, minibatches, params)


@checked
def search(model: PathArg = "gpt", gpus: int = 8, batch: int = 0, *, hardware: PathArg = "h100",
           schedules: Union[str, Sequence[str]] = "1f1b", microbatch_sizes: Sequence[int] = (1, 2, 4, 8),
           max_tp: int = 0, minibatches: int = 2, params: Params = None, engine: str = "analytic",
           jobs: Optional[int] = None, client: Any = None) -> Table:
    """Every way to run `model` on `gpus` GPUs with a global `batch` (samples per iteration over all
    data-parallel replicas; 0: the model's batch): tp x pp x dp splits (tp up to `max_tp`, default
    the GPUs of a node), each microbatch size that divides a replica's batch, each schedule. Every
    candidate is predicted by `engine` in `jobs` worker processes (default: all cores; 1 runs here),
    or, given a `dask.distributed` Client as `client`, as tasks on its cluster. Returns a DataFrame
    (a list of dicts without pandas) with the columns of `pipetwin search --csv`: rank (1 = best;
    None for those that do not fit), tp, pp, dp, microbatch_size, fits, and the sweep's columns,
    best first."""
    names = [schedules] if isinstance(schedules, str) else list(schedules)
    if names == ["all"]:
        names = [s["name"] for s in _core.schedules() if s["standalone"]]
    points = _core.search_points(os.fspath(model), os.fspath(hardware), int(gpus), int(batch), names,
                                 [int(b) for b in microbatch_sizes], int(max_tp), int(minibatches), _params(params))
    engine = engine or default_engine()
    jobs_list: List[_Job] = [(engine, os.fspath(model), s, os.fspath(hardware), p, m, k, list(ps))
                             for s, p, m, k, ps in points]
    rows = run_jobs(_one, jobs_list, jobs, client)
    out: Table = frame(json.loads(_core.rank_search(rows)))
    return out
