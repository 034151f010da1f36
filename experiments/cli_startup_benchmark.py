#!/usr/bin/env python3
"""How long `pipetwin` takes to start and how much memory it holds, for commands that do no
work (--version, models) and for `devices`, which loads the CUDA executor (libpipetwin_cuda.so,
with cuBLAS) when the build has one. Prints the median wall time over RUNS runs and the largest
resident set (ru_maxrss) of each.

    python3 experiments/cli_startup_benchmark.py [build/bin/pipetwin] [RUNS]"""
import os
import statistics
import subprocess
import sys
import time


def measure(command, runs):
    times, rss_kib = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        times.append(time.perf_counter() - start)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(command)} failed")
        rss_kib = max(rss_kib, usage.ru_maxrss)
    return statistics.median(times), rss_kib


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else "build/bin/pipetwin"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    print(f"{program}, median of {runs} runs")
    print(f"{'command':<20} {'wall ms':>8} {'max RSS MiB':>12}")
    for args in (["--version"], ["models"], ["devices"]):
        wall_s, rss_kib = measure([program, *args], runs)
        print(f"{' '.join(args):<20} {1e3 * wall_s:8.1f} {rss_kib / 1024:12.1f}")


if __name__ == "__main__":
    main()
