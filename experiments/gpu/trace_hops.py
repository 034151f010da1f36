#!/usr/bin/env python3
"""A pipeline's hops from a validation's Chrome traces (`validate --traces-out`), measured and predicted.

A hop is the time from a task's end to the start of the task on the next processor that waits on
it (a forward's on the next stage, a backward's on the one before), taken where that processor
was free before the sender finished, so that the gap is the hop's alone: the link thread's
wake-up, the copy and the receiver's wake-up. Hops are grouped by how long the receiver had been
idle when the sender finished: a thread that slept longer wakes slower (measure_handoff_s,
exec/common/profiling.cpp). The first step is left out (the run's first calls).

    python3 experiments/gpu/trace_hops.py traces/resnet56-1f1b-p8-round1.json ...
"""
import json
import re
import statistics
import sys

NAME = re.compile(r"(\w+)\(k(\d+),m(\d+),s(\d+)\)")
IDLE_BINS_US = ((0, 100), (100, 300), (300, 1000), (1000, 3000), (3000, float("inf")))


def hops(trace, processors_pid):
    """(receiver's idle before the sender's end, hop) in us, for every hop that was waited for."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "bubble"
              and e["pid"] == processors_pid]
    tasks, by_processor = {}, {}
    for e in events:
        by_processor.setdefault(e["tid"], []).append(e)
        m = NAME.fullmatch(e["name"])
        if m and m[1] in ("F", "B"):
            tasks[(m[1], int(m[2]), int(m[3]), int(m[4]))] = e
    previous_end = {}
    for line in by_processor.values():
        line.sort(key=lambda e: e["ts"])
        for before, after in zip(line, line[1:]):
            previous_end[id(after)] = before["ts"] + before["dur"]
    found = []
    for (kind, step, micro, stage), e in tasks.items():
        if step == 0:
            continue
        sender = tasks.get(("F", step, micro, stage - 1) if kind == "F" else ("B", step, micro, stage + 1))
        if sender is None:
            continue
        sent = sender["ts"] + sender["dur"]
        free = previous_end.get(id(e))
        if free is not None and free < sent:
            found.append((sent - free, e["ts"] - sent))
    return found


def pid_of(trace, name):
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"] == name:
            return e["pid"]
    return None


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for engine in ("cuda", "cpu", "systemc"):
        found = []
        for path in paths:
            with open(path) as f:
                trace = json.load(f)
            pid = pid_of(trace, f"processors ({engine})")
            if pid is not None:
                found += hops(trace, pid)
        if not found:
            continue
        print(f"{engine}: {len(found)} hops waited for, median {statistics.median(h for _, h in found):.1f} us")
        for low, high in IDLE_BINS_US:
            group = [h for idle, h in found if low <= idle < high]
            if group:
                print(f"  receiver idle {low:g}-{high:g} us: {len(group):4d} hops, median {statistics.median(group):7.1f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
