#!/usr/bin/env python3
"""`pipetwin search` against published measurements of parallel configurations (issue 18).

parallel_rows.csv holds vTrain's measured Megatron-DeepSpeed iteration times of GPT models on 64,
256 and 512 A100s under many (tensor, pipeline, data, microbatch) splits. For each model and GPU
count this runs `pipetwin search` (uncalibrated, the a100 profile) over every split of the GPUs
and the measured microbatch sizes, and prints:
  - the published best (the fastest measured configuration) and pipetwin's best choice overall;
  - pipetwin's best among the measured configurations, and where it puts the published best;
  - over the measured configurations: Spearman rank correlation and MAPE of predicted vs measured.

    experiments/validation/search_vs_published.py [--pipetwin build/bin/pipetwin] [--param zero=1] [--engine systemc]

Framework settings as predict.py maps them: fp16 with fp32 master weights and Adam, every block's
activations recomputed (recompute=blocks), blocking stage-to-stage sends (p2p=rendezvous). The
measured runs' optimizer sharding and network are not stated in the data: --param zero=1 and the
profile's nodes (8 GPUs, one HDR NIC each) are assumptions, printed with the results.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from predict import FRAMEWORK_RECOMPUTE, SOURCE_P2P, spearman  # noqa: E402


def search(pipetwin, rows, extra, engine):
    first = rows[0]
    sizes = sorted({int(r["micro_batch"]) for r in rows})
    params = {"layers": first["layers"], "hidden": first["hidden"], "heads": first["heads"], "seq": first["seq"],
              "vocab": first["vocab"], "dtype_bytes": 2, "precision": first["precision"],
              "optimizer": first["optimizer"], "master_weights": "true",
              "recompute": FRAMEWORK_RECOMPUTE[first["recompute"]], "p2p": SOURCE_P2P.get(first["source"], "async")}
    args = [pipetwin, "search", "-m", "gpt", "--hardware", first["gpu"], "--gpus", first["gpus"],
            "--batch", first["global_batch"], "--microbatch-sizes", ",".join(map(str, sizes)),
            "--schedules", first["schedule"], "--json", "--engine", engine]
    for key, value in params.items():
        args += ["--param", f"{key}={value}"]
    for item in extra:
        args += ["--param", item]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(" ".join(args) + "\n" + done.stderr.strip())
    return json.loads(done.stdout)


def split(row):
    return (int(row["tensor"]), int(row["pipeline"]), int(row["data"]), int(row["micro_batch"]))


def describe(key):
    t, p, d, b = key
    return f"t={t} p={p} d={d} microbatch {b}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"))
    parser.add_argument("--rows", default=os.path.join(HERE, "parallel_rows.csv"))
    parser.add_argument("--param", action="append", default=[], help="extra key=value for every search")
    parser.add_argument("--engine", choices=["analytic", "systemc"], default="analytic",
                        help="the predicting engine (systemc: links shared by pipeline and all-reduce traffic)")
    args = parser.parse_args()
    groups = defaultdict(list)
    with open(args.rows) as f:
        for row in csv.DictReader(f):
            groups[(row["hidden"], row["layers"], row["gpus"])].append(row)
    print(f"assumptions: {' '.join(args.param) or '(none)'}; hardware a100 as profiled (8 GPUs and 8 HDR NICs a node); "
          f"engine {args.engine}")
    same = 0
    for (hidden, layers, gpus), rows in groups.items():
        found = search(args.pipetwin, rows, args.param, args.engine)
        by_split = {(r["tp"], r["pp"], r["dp"], r["microbatch_size"]): r for r in found}
        measured = {}
        for row in rows:  # repeated measurements of one configuration: their mean
            measured.setdefault(split(row), []).append(float(row["measured_s"]))
        measured = {k: statistics.mean(v) for k, v in measured.items()}
        published = min(measured, key=measured.get)
        best = next((r for r in found if r["rank"] == 1), None)
        predicted = {k: by_split[k]["iteration_s"] for k in measured if k in by_split and by_split[k]["error"] == ""}
        among = min(predicted, key=predicted.get) if predicted else None
        order = sorted(predicted, key=predicted.get)
        errors = [abs(predicted[k] - measured[k]) / measured[k] for k in predicted]
        keys = list(predicted)
        print(f"\nGPT h{hidden} L{layers} on {gpus} A100s, batch {rows[0]['global_batch']}: "
              f"{len(measured)} measured configurations, {len(found)} candidates searched")
        print(f"  published best:            {describe(published)}: {measured[published]:.2f} s")
        if best:
            key = (best["tp"], best["pp"], best["dp"], best["microbatch_size"])
            note = f"measured {measured[key]:.2f} s" if key in measured else "not measured"
            print(f"  pipetwin's choice:         {describe(key)}: predicted {best['iteration_s']:.2f} s ({note})")
        else:
            print("  pipetwin's choice:         none fits in memory")
        if among:
            same += among == published
            print(f"  best of the measured:      {describe(among)} by pipetwin "
                  f"({'the published best' if among == published else 'published best is its no. ' + str(order.index(published) + 1) if published in order else 'published best not predicted'})")
            fits = sum(1 for k in measured if k in by_split and by_split[k]["fits"])
            print(f"  over the measured: MAPE {100 * statistics.mean(errors):.1f}%, Spearman "
                  f"{spearman([predicted[k] for k in keys], [measured[k] for k in keys]):.2f}; "
                  f"{fits} of {len(measured)} fit in pipetwin's memory model")
    print(f"\npipetwin picks the published best among the measured configurations in {same} of {len(groups)} cases")


if __name__ == "__main__":
    main()
