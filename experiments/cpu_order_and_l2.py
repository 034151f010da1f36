#!/usr/bin/env python3
"""Whether a schedule's task order, not its work, moves a one-processor step on this CPU: mlp's
hidden width swept so that its weights W and their gradients dW go from fitting the core's L2
together, through W fitting alone, to neither. For each width, `pipetwin validate` of the given
schedules at P = 1 (ROUNDS rounds, 128 steps, each round paired against sequential) prints each
schedule against sequential, measured and predicted, and how far its forwards and backwards ran
from their predicted times (the table's, timed in sequential's order, with the weight-reuse
model's charge for the schedule's own order, docs/executor.md, Calibration 8). docs/executor.md,
"Another machine, and an order the table cannot see", has the figures of 2026-11-29 before that
model (2 MiB L2: gpipe 4-6% faster where W + dW is 1.5-2.3 MB, level elsewhere; the model level
everywhere), and "Weights that stay in the cache" those after it.

    python3 experiments/cpu_order_and_l2.py [--pipetwin build/bin/pipetwin] [--rounds 24]
        [--widths 128,192,256,384,1024] [--schedules gpipe,pipedream,layerpipe]"""
import argparse
import json
import statistics
import subprocess
import sys


def l2_bytes():
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            text = f.read().strip()
        return int(text[:-1]) * {"K": 1024, "M": 1 << 20}[text[-1]] if text[-1] in "KM" else int(text)
    except (OSError, ValueError, KeyError):
        return 0


def weight_bytes(width):
    widths = [784, width, width, 10]
    return 4 * sum(a * b + b for a, b in zip(widths, widths[1:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipetwin", default="build/bin/pipetwin")
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--widths", default="128,192,256,384,1024")
    parser.add_argument("--schedules", default="gpipe,pipedream,layerpipe")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    schedules = [s for s in args.schedules.split(",") if s != "sequential"]
    print(f"mlp 784,w,w,10 at P = 1, {args.rounds} rounds of 128 steps; L2 per core "
          f"{l2_bytes() / (1 << 20):.2f} MiB (0: unknown)")
    print(f"{'width':>6} {'W MB':>6} {'W+dW MB':>8} {'schedule':>10} {'measured':>9} {'predicted':>10} "
          f"{'F vs pred.':>11} {'B vs pred.':>11}")
    for width in widths:
        command = [args.pipetwin, "validate", "-m", "mlp", "--param", f"widths=784,{width},{width},10",
                   "--schedules", ",".join(["sequential", *schedules]), "-p", "1", "--steps", "128",
                   "--runs", str(args.rounds), "--json", "-q"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed: {done.stderr.strip()}")
        rows = {row["schedule"]: row for row in json.loads(done.stdout)["rows"]}
        sequential = rows["sequential"]
        w_mb = weight_bytes(width) / 1e6
        for name in schedules:
            row = rows[name]
            measured = statistics.median(a / b for a, b in zip(row["measured_rounds_s"], sequential["measured_rounds_s"])) - 1
            predicted = statistics.median(a / b for a, b in zip(row["predicted_rounds_s"], sequential["predicted_rounds_s"])) - 1
            parts = row["task_time_error_by_part"]
            backward = parts.get("p0 B", parts.get("p0 BA", float("nan")))
            print(f"{width:>6} {w_mb:6.2f} {2 * w_mb:8.2f} {name:>10} {100 * measured:+8.1f}% {100 * predicted:+9.1f}% "
                  f"{100 * parts.get('p0 F', float('nan')):+10.1f}% {100 * backward:+10.1f}%")


if __name__ == "__main__":
    main()
