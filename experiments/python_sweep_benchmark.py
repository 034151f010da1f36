#!/usr/bin/env python3
"""Benchmark: a 100-configuration sweep from Python, serial (jobs=1) against all cores (the
default), wall time of each and the ratio. Prints figures; asserts nothing.

    python3 experiments/python_sweep_benchmark.py [--model resnet110] [--repeats 3]
Uses the installed pipetwin package, or build/python when it is not installed.
"""
import argparse
import os
import sys
import time

try:
    import pipetwin
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "python"))
    import pipetwin


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet110")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    schedules = ["sequential", "gpipe", "1f1b", "pipedream", "pipedream-2bw", "zb-h1", "zb-h2",
                 "interleaved-1f1b", "stale-weights", "layerwise-merge"]
    processors = list(range(1, 11))
    config = dict(model=args.model, schedules=schedules, processors=processors, microbatches=16, minibatches=32)
    print(f"{len(schedules) * len(processors)} configurations: {args.model}, {len(schedules)} schedules x P = 1..10, "
          f"16 microbatches, 32 minibatches, {pipetwin._api.default_engine()} engine; {os.cpu_count()} cores")
    times = {}
    for jobs in (1, os.cpu_count() or 1):
        best = float("inf")
        for _ in range(args.repeats):
            begin = time.perf_counter()
            frame = pipetwin.sweep(**config, jobs=jobs)
            best = min(best, time.perf_counter() - begin)
        times[jobs] = best
        failed = int((frame["error"] != "").sum()) if hasattr(frame, "columns") else 0
        print(f"jobs={jobs}: {best:.2f} s (best of {args.repeats}), {len(frame)} rows, {failed} with an error")
    serial, parallel = times[1], times[max(times)]
    print(f"parallel / serial wall time: {parallel / serial:.2f} (ideal on {max(times)} cores: {1 / max(times):.2f})")


if __name__ == "__main__":
    main()
