"""search(): the same ranking in worker processes, serially and on a Dask LocalCluster; its
candidates are every t x p x d split of the GPUs; memory decides what fits."""
import pytest

import pipetwin

GPT = {"layers": 4, "hidden": 512, "heads": 8, "seq": 256, "vocab": 1024, "dtype_bytes": 2, "precision": "bf16"}
ARGS = dict(model="gpt", gpus=8, batch=16, hardware="h100", microbatch_sizes=[1, 2], params=GPT)


def test_search_ranks_every_split_the_same_in_processes_and_serially():
    serial = pipetwin.search(**ARGS, jobs=1)
    parallel = pipetwin.search(**ARGS, jobs=2)
    assert serial.equals(parallel)
    assert list(serial.columns) == pipetwin._core.search_columns()
    # Every t x p x d = 8 with p at most the 6 stages the network can be cut into (its layers),
    # d dividing the batch of 16, and each microbatch size dividing a replica's batch.
    splits = {(t, p, 8 // (t * p)) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8) if 8 % (t * p) == 0 and p <= 6}
    assert set(zip(serial.tp, serial.pp, serial.dp)) == splits
    fits = serial[serial.fits]
    assert list(fits["rank"]) == list(range(1, len(fits) + 1))
    assert list(fits.iteration_s) == sorted(fits.iteration_s)


def test_search_on_a_dask_local_cluster_gives_the_same_table():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            on_cluster = pipetwin.search(**ARGS, client=client)
    assert on_cluster.equals(pipetwin.search(**ARGS, jobs=1))


def test_search_checks_memory():
    capacity = 2**26  # some splits fit in 64 MiB, some do not
    small = pipetwin.search(**{**ARGS, "params": {**GPT, "memory_bytes": capacity}}, jobs=1)
    assert (small.error == "").all()
    assert list(small.fits) == list(small.max_peak_memory_bytes <= capacity)
    assert small.fits.any() and not small.fits.all()
    assert small[~small.fits]["rank"].isna().all()
    assert small[~small.fits].out_of_memory.str.contains("out of memory").all()


@pytest.mark.parametrize("changes, message", [
    ({"schedules": ["1f1b", "gpipe", "1f1b"]}, "schedule 1f1b is given twice"),
    ({"microbatch_sizes": [1, 2, 1]}, "microbatch size 1 is given twice"),
    ({"microbatch_sizes": []}, "no microbatch sizes to try"),
    ({"microbatch_sizes": [2, 0]}, "microbatch sizes must be at least 1, got 0"),
])
def test_search_refuses_a_value_given_twice_and_sizes_no_split_can_have(changes, message):
    # Twice would rank the same candidates twice; none or 0 would end in "no split" without saying why.
    with pytest.raises(pipetwin.PipetwinError, match=message):
        pipetwin.search(**{**ARGS, **changes}, jobs=1)
