#!/usr/bin/env python3
"""Heap allocations per training step on the CPU executor's threads (issue 16's "no allocation on
the hot path"). Runs `pipetwin run` twice under build/lib/libpipetwin_allocation_counter.so
(experiments/allocation_counter.cpp, LD_PRELOAD; glibc), at --short and --long minibatches, and
prints, per model and schedule, the calls and bytes the executor's threads (every thread but the
process's first, which builds the graph) made per extra step: what a step allocates once the
first steps have made what is kept (the convolutions' plans, the gradient sums, the weights);
and the process's minor page faults per extra step (memory the heap took from the system anew).

    python experiments/allocations_per_step.py [--pipetwin build/bin/pipetwin]
        [--counter build/lib/libpipetwin_allocation_counter.so] [--models lenet5,resnet8]
        [--schedules 1f1b] [--procs 2] [--short 2] [--long 6]

About 10 s for the defaults. Counts are deterministic up to the threads' interleaving (a
transfer's copy may be made on either side)."""
import argparse
import os
import re
import resource
import subprocess
import sys

LINE = re.compile(r"allocation_counter: first thread (\d+) calls (\d+) bytes; other threads (\d+) calls (\d+) bytes")


def counted_run(args, model, schedule, steps):
    """(calls, bytes) of the executor's threads, and the process's minor page faults, in one
    `pipetwin run`."""
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(args.counter))
    command = [args.pipetwin, "run", "-m", model, "-s", schedule, "-p", str(args.procs), "--steps", str(steps),
               "--data", "synthetic", "-q", "--json"]
    faults_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults_before
    if done.returncode != 0:
        sys.exit(f"allocations_per_step: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    found = LINE.search(done.stderr)
    if not found:
        sys.exit("allocations_per_step: the counter printed nothing: is --counter the preloadable library?")
    return int(found.group(3)), int(found.group(4)), faults


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipetwin", default="build/bin/pipetwin")
    parser.add_argument("--counter", default="build/lib/libpipetwin_allocation_counter.so")
    parser.add_argument("--models", default="lenet5,resnet8")
    parser.add_argument("--schedules", default="1f1b")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--short", type=int, default=2, help="minibatches of the first run")
    parser.add_argument("--long", type=int, default=6, help="minibatches of the second run")
    args = parser.parse_args()
    if args.long <= args.short or args.short < 1:
        parser.error("--long must be more than --short, and --short at least 1")
    for path, what in ((args.pipetwin, "--pipetwin"), (args.counter, "--counter")):
        if not os.path.isfile(path):
            parser.error(f"{what} {path} does not exist (build first: cmake --build build)")
    extra = args.long - args.short
    print(f"{'model':10} {'schedule':10} {'P':>2} {'allocations/step':>17} {'MiB/step':>9} {'page faults/step':>17}")
    for model in args.models.split(","):
        for schedule in args.schedules.split(","):
            short_calls, short_bytes, short_faults = counted_run(args, model, schedule, args.short)
            long_calls, long_bytes, long_faults = counted_run(args, model, schedule, args.long)
            calls = (long_calls - short_calls) / extra
            mib = (long_bytes - short_bytes) / extra / 2**20
            faults = (long_faults - short_faults) / extra
            print(f"{model:10} {schedule:10} {args.procs:>2} {calls:>17.0f} {mib:>9.1f} {faults:>17.0f}", flush=True)


if __name__ == "__main__":
    main()
