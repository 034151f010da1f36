"""experiments/trace_waits.py on a trace laid out by hand: each processor's tasks by kind and by
the wait before them (measured, pid 1) against their predicted durations (pid 3), the warm-up
minibatches and each processor's first task left out, and its errors for unreadable input."""
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "trace_waits.py")


def task(pid, tid, name, cat, ts_us, dur_us, task_id):
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": ts_us, "dur": dur_us,
            "args": {"task": task_id}}


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_tasks_grouped_by_the_wait_before_them(tmp_path):
    measured = [
        task(1, 0, "F(k0,m0,s0)", "F", 0, 1000, 0),           # warm-up minibatch: left out
        task(1, 0, "F(k1,m0,s0)", "F", 1000, 1000, 1),        # no wait: 1000 against 800
        task(1, 0, "F(k1,m1,s0)", "F", 12000, 1500, 2),       # 10 ms after task 1: 1500 against 1000
        task(1, 0, "B(k1,m1,s0)", "B", 13600, 2000, 3),       # 0.1 ms after task 2: 2000 against 2000
        task(1, 1, "F(k1,m0,s1)", "F", 5000, 500, 4),         # p1's first: left out
        task(1, 1, "F(k0,m1,s1)", "F", 5600, 500, 6),         # warm-up minibatch, after another: left out
        task(1, 1, "F(k1,m1,s1)", "F", 30500, 600, 5),        # 24.4 ms after task 6: 600 against 400
    ]
    predicted = [task(3, e["tid"], e["name"], e["cat"], e["ts"], d, e["args"]["task"])
                 for e, d in zip(measured, (1000, 800, 1000, 2000, 500, 100, 400))]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": measured + predicted}))
    done = run(str(trace), "--skip", "1")
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()[1:]]
    # processor, kind, the wait's bin (three words), tasks, error, mean measured ("2.00 ms")
    rows = {(cells[0], cells[1], " ".join(cells[2:-4])): (int(cells[-4]), cells[-3]) for cells in lines}
    assert rows == {
        ("0", "B", "< 0.5 ms"): (1, "+0.0%"),
        ("0", "F", "< 0.5 ms"): (1, "+25.0%"),
        ("0", "F", "< 20 ms"): (1, "+50.0%"),
        ("1", "F", ">= 20 ms"): (1, "+50.0%"),
    }


def test_unreadable_input_is_named(tmp_path):
    done = run(str(tmp_path / "missing.json"))
    assert done.returncode != 0 and "cannot read" in done.stderr
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    done = run(str(empty))
    assert done.returncode != 0 and "no measured" in done.stderr
    done = run(str(empty), "--bins-ms", "x")
    assert done.returncode != 0 and "--bins-ms needs numbers" in done.stderr
