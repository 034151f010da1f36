#!/usr/bin/env python3
"""Measured against predicted task times, by how long the task's processor waited before it: read
from the Chrome trace that `pipetwin run --device cpu|cuda --trace FILE` writes (pid 1: the
measured run, pid 3: the prediction replayed, the same task ids). For each processor and task
kind, tasks are put in bins by the measured wait between the end of the processor's previous task
and their start, and each bin prints how many tasks it has, their summed measured time over their
summed predicted time, minus 1, and their mean measured time. The first --skip minibatches are
left out (warm-up). docs/executor.md, "Caches lost in a wait", has the figures of 2026-11-29: on
a 2-vCPU virtual machine, resnet8's second processor ran its forwards 4-5% under their predicted
time after waits under 5 ms and 10-11% over it after waits of 5-20 ms.

    pipetwin run -m resnet8 -s 1f1b -p 2 --steps 12 --calibration TABLE --trace run.json
    python3 experiments/trace_waits.py run.json [--skip 2] [--bins-ms 0.5,5,20]"""
import argparse
import collections
import json
import re
import sys

MEASURED_PID, PREDICTED_PID = 1, 3
MINIBATCH = re.compile(r"\(k(\d+),")


def minibatch_of(name):
    match = MINIBATCH.search(name)
    return int(match.group(1)) if match else -1


def wait_bin(wait_ms, edges_ms):
    """The bin's index (for the order they print in) and its label."""
    for i, edge in enumerate(edges_ms):
        if wait_ms < edge:
            return i, f"< {edge:g} ms"
    return len(edges_ms), f">= {edges_ms[-1]:g} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a trace written by `pipetwin run --trace`")
    parser.add_argument("--skip", type=int, default=2, help="minibatches left out at the start (default 2)")
    parser.add_argument("--bins-ms", default="0.5,5,20", help="upper edges of the wait bins, in ms (default 0.5,5,20)")
    args = parser.parse_args()
    try:
        edges_ms = sorted(float(x) for x in args.bins_ms.split(","))
    except ValueError:
        sys.exit(f"trace_waits.py: --bins-ms needs numbers separated by commas, got '{args.bins_ms}'")
    if not edges_ms or edges_ms[0] <= 0:
        sys.exit("trace_waits.py: --bins-ms needs positive edges")
    try:
        with open(args.trace) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"trace_waits.py: cannot read '{args.trace}': {e}")
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tasks = [e for e in events if e.get("ph") == "X" and "task" in e.get("args", {})]
    predicted_us = {e["args"]["task"]: e["dur"] for e in tasks if e["pid"] == PREDICTED_PID}
    measured = [e for e in tasks if e["pid"] == MEASURED_PID]
    if not measured or not predicted_us:
        sys.exit(f"trace_waits.py: '{args.trace}' has no measured (pid {MEASURED_PID}) or predicted "
                 f"(pid {PREDICTED_PID}) tasks: write it with `pipetwin run --device cpu --trace`")

    # per (processor, kind, (bin index, label)): [measured us, predicted us, tasks]
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for processor in sorted({e["tid"] for e in measured}):
        previous_end = None
        for e in sorted((e for e in measured if e["tid"] == processor), key=lambda e: e["ts"]):
            task = e["args"]["task"]
            if previous_end is not None and minibatch_of(e["name"]) >= args.skip and task in predicted_us:
                entry = sums[(processor, e["cat"], wait_bin((e["ts"] - previous_end) / 1000, edges_ms))]
                entry[0] += e["dur"]
                entry[1] += predicted_us[task]
                entry[2] += 1
            previous_end = e["ts"] + e["dur"]
    print(f"{'processor':>9}  {'kind':4}  {'wait before':>12}  {'tasks':>5}  {'measured / predicted - 1':>24}  {'mean measured':>13}")
    for (processor, kind, (_, label)), (m_us, p_us, n) in sorted(sums.items()):
        ratio = f"{m_us / p_us - 1:+.1%}" if p_us > 0 else "-"
        print(f"{processor:>9}  {kind:4}  {label:>12}  {n:>5}  {ratio:>24}  {m_us / n / 1000:>10.2f} ms")


if __name__ == "__main__":
    main()
