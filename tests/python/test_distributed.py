"""pipetwin.run(session=MpiSession()) across the processes of an MPI job (docs/distributed.md):
a script under `mpirun -np 2` trains lenet5 under 1f1b to the weights and losses of the same run
in one process, bit for bit; rank 1 gets None; more ranks than processors is one clear error.
Skipped, saying why, where mpirun or the build's MPI is missing."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import pipetwin

MPIRUN = shutil.which("mpirun")

SCRIPT = textwrap.dedent("""
    import json, sys
    import pipetwin
    out = sys.argv[1]
    with pipetwin.MpiSession() as s:
        try:
            t = pipetwin.run(model="lenet5", schedule="1f1b", microbatches=4, minibatches=3, data="synthetic",
                             processors=int(sys.argv[2]), session=s)
        except pipetwin.PipetwinError as e:
            if s.rank == 0:
                json.dump({"error": str(e)}, open(out, "w"))
            sys.exit(0)
        if s.rank == 0:
            json.dump({"ranks": s.ranks, "loss": list(t.minibatch_loss),
                       "weights": [[float(v) for v in w] for w in t.weights()]}, open(out, "w"))
        elif t is not None:
            json.dump({"error": "rank %d got a result" % s.rank}, open(out + ".other", "w"))
    """)


def run_under_mpirun(tmp_path, processors):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out.json"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run([MPIRUN, "-q", "--oversubscribe", "-np", "2", sys.executable, str(script), str(out),
                           str(processors)], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and "built without MPI" in done.stderr:
        pytest.skip("this build of pipetwin has no MPI (install libopenmpi-dev and build again)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "out.json.other").exists(), (tmp_path / "out.json.other").read_text()
    return json.loads(out.read_text())


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
def test_a_run_across_two_ranks_equals_one_process(tmp_path):
    across = run_under_mpirun(tmp_path, 2)
    assert "error" not in across, across.get("error")
    assert across["ranks"] == 2
    alone = pipetwin.run(model="lenet5", schedule="1f1b", processors=2, microbatches=4, minibatches=3, data="synthetic")
    assert across["loss"] == list(alone.minibatch_loss)
    assert across["weights"] == [[float(v) for v in w] for w in alone.weights()]


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
def test_more_ranks_than_processors_is_a_clear_error(tmp_path):
    across = run_under_mpirun(tmp_path, 1)
    assert "2 ranks for 1 processors" in across["error"]
