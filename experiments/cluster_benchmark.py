#!/usr/bin/env python3
"""The 4096-GPU simulation benchmark (issue "Beyond one pipeline"): GPT-175B on 4096 H100s as
t=8 tensor-parallel x p=16 pipeline stages x d=32 data-parallel replicas, 1F1B with 64
microbatches of one sequence per replica, simulated with link contention by the SystemC engine.
Prints the wall time and peak memory of one `pipetwin simulate` on one core (pinned with taskset
where there is one), the task graph's size, and what the simulation predicts. Run after
scripts/build.sh; prints figures only (docs/simulator.md quotes them).

  python3 experiments/cluster_benchmark.py [--pipetwin build/bin/pipetwin] [--microbatches 64]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

GPT_175B = ["layers=96", "hidden=12288", "heads=96", "seq=2048", "vocab=51200", "dtype_bytes=2",
            "precision=bf16", "optimizer=adam", "master_weights=true"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipetwin", default="build/bin/pipetwin", help="the pipetwin binary")
    parser.add_argument("--microbatches", type=int, default=64, help="microbatches per replica and iteration")
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--pp", type=int, default=16)
    parser.add_argument("--dp", type=int, default=32)
    parser.add_argument("--engine", choices=["simulate", "evaluate"], default="simulate")
    args = parser.parse_args()
    if not os.path.exists(args.pipetwin):
        print(f"no {args.pipetwin}: build first (scripts/build.sh)", file=sys.stderr)
        return 2
    gpus = args.tp * args.pp * args.dp
    params = GPT_175B + [f"batch={args.microbatches}", f"tp={args.tp}", f"dp={args.dp}"]
    common = ["-m", "gpt", "-s", "1f1b", "--hardware", "h100", "-p", str(gpus),
              "--microbatches", str(args.microbatches), "--minibatches", "2"]
    for p in params:
        common += ["--param", p]
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    print(f"== GPT-175B on {gpus} H100s: tp={args.tp} x pp={args.pp} x dp={args.dp}, 1f1b, "
          f"{args.microbatches} microbatches, 2 iterations; {'one core' if pin else 'unpinned'}", flush=True)
    start = time.perf_counter()
    run = subprocess.run(pin + [args.pipetwin, args.engine, *common, "--json"], check=True,
                         capture_output=True, text=True)
    wall_s = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(run.stdout)
    # The simulation runs first: the largest child so far is its peak (ru_maxrss).
    print(f"{args.engine}: {wall_s:.2f} s wall, peak memory {peak_kib / 1024:.0f} MiB "
          f"(limits: 60 s on one core, 8 GB)")
    with tempfile.TemporaryDirectory() as folder:
        graph_file = os.path.join(folder, "graph.json")
        subprocess.run([args.pipetwin, "schedule", *common, "-o", graph_file], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(graph_file) as f:
            graph = json.load(f)
    print(f"task graph: {len(graph['processors'])} processors (tensor-parallel groups of {args.tp} GPUs), "
          f"{len(graph['links'])} links, {len(graph['tasks'])} tasks, {len(graph['collectives'])} all-reduces")
    samples = args.microbatches * args.dp
    print(f"predicted iteration: {result['iteration_s']:.3f} s for {samples} sequences of 2048 tokens; "
          f"bubble {100 * result['bubble_fraction']:.1f}%; peak memory per GPU "
          f"{max(result['peak_memory_bytes']) / 2**30:.1f} GiB of "
          f"{max(result['memory_capacity_bytes']) / 2**30:.0f}; link traffic {result['total_link_bytes'] / 2**40:.2f} TiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
