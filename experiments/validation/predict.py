#!/usr/bin/env python3
"""Predicts published rows (pipeline_rows.csv by default) with pipetwin, uncalibrated, and prints the error.

For each published configuration it runs `pipetwin evaluate` (the analytic evaluator of the same
task graph the simulator runs) on the row's hardware profile with the GPT model, precision,
optimizer, recomputation, microbatches and stage cuts of the row, and compares the predicted
iteration time with the measured one. It prints, for the development and held-out rows apart:
the mean absolute percentage error (MAPE), the bias (mean signed error: positive when pipetwin
predicts too slow), the Spearman rank correlation, and the worst rows.

    experiments/validation/predict.py [--pipetwin build/bin/pipetwin] [--csv predictions.csv]
    experiments/validation/predict.py --rows experiments/validation/single_node_rows.csv   # t and d too
    experiments/validation/predict.py --param hardware.cost_model=roofline   # the model before

Nothing here is fitted: the hardware profile's figures come with their sources
(models/data/hardware/*.json, docs/cost-model.md).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# The rows name recomputation as Megatron-LM does; its "full" checkpoints every transformer block
# (the embedding and the LM head keep their activations): pipetwin's recompute=blocks.
FRAMEWORK_RECOMPUTE = {"none": "none", "selective": "selective", "full": "blocks"}


# How each source's framework moves activations between stages: Megatron-DeepSpeed's pipeline
# engine sends and receives with blocking calls (pipetwin's p2p=rendezvous); Megatron-LM posts
# its sends and receives together, non-blocking (batch_isend_irecv: p2p=async).
SOURCE_P2P = {"vtrain-micro24": "rendezvous", "korthikanti-mlsys23": "async"}


def stage_cuts(layers, stages):
    """Megatron's uniform split: layers / stages transformer blocks per stage (per model chunk
    when interleaved), the embedding with the first and the LM head with the last (pipetwin
    numbers the embedding 0 and block k as k, and cuts after the given layers)."""
    if layers % stages:
        raise ValueError(f"{layers} layers do not split evenly over {stages} stages")
    return [layers // stages * k for k in range(1, stages)]


def command(pipetwin, row, extra=()):
    """`pipetwin evaluate` for one row. A row with tensor (t) or data (d) parallelism runs on its
    t x p x d GPUs (`-p` the GPU count, `tp` and `dp`; docs/parallelism.md): `batch` is a
    replica's share of the global batch, split into its microbatches."""
    stages, tensor, data = int(row["pipeline"]), int(row.get("tensor", 1)), int(row.get("data", 1))
    gpus = stages * tensor * data
    if "gpus" in row and int(row["gpus"]) != gpus:
        raise ValueError(f"row {row['id']}: t {tensor} x p {stages} x d {data} is not its {row['gpus']} GPUs")
    global_batch, micro_batch = int(row["global_batch"]), int(row["micro_batch"])
    if global_batch % (data * micro_batch):
        raise ValueError(f"row {row['id']}: a global batch of {global_batch} does not split into {data} replicas "
                         f"of microbatches of {micro_batch}")
    replica_batch = global_batch // data
    params = {
        "layers": row["layers"], "hidden": row["hidden"], "heads": row["heads"], "seq": row["seq"],
        "vocab": row["vocab"], "batch": replica_batch,
        "dtype_bytes": 2 if row["precision"] in ("fp16", "bf16") else 4,
        "precision": row["precision"], "optimizer": row["optimizer"],
        "master_weights": "true" if row["precision"] in ("fp16", "bf16") else "false",
        "recompute": FRAMEWORK_RECOMPUTE[row["recompute"]],
        "p2p": SOURCE_P2P.get(row["source"], "async"),
    }
    if tensor > 1:
        params["tp"] = tensor
    if data > 1:
        params["dp"] = data
    if row.get("sequence_parallel") == "1":  # Megatron's sequence parallelism in the t-groups
        params["sp"] = 1
    chunks = int(row.get("chunks") or 1)  # model chunks per GPU (interleaved-1f1b)
    if chunks > 1:
        params["chunks"] = chunks
    if stages * chunks > 1:
        params["cuts"] = ",".join(str(c) for c in stage_cuts(int(row["layers"]), stages * chunks))
    args = [pipetwin, "evaluate", "-m", "gpt", "-s", row["schedule"], "--hardware", row["gpu"],
            "-p", str(gpus), "--microbatches", str(replica_batch // micro_batch), "--minibatches", "2", "--json"]
    for key, value in params.items():
        args += ["--param", f"{key}={value}"]
    for item in extra:
        args += ["--param", item]
    return args


def parallelism_kind(row):
    """Which kinds of parallelism a row combines, e.g. "tp+pp" (pp alone: "pp")."""
    kinds = [name for name, column in (("tp", "tensor"), ("pp", "pipeline"), ("dp", "data"))
             if int(row.get(column, 1)) > 1]
    return "+".join(kinds) or "one GPU"


def predict(pipetwin, row, extra=()):
    args = command(pipetwin, row, extra)
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"row {row['id']}: {' '.join(args)}\n{done.stderr.strip()}")
    return json.loads(done.stdout)["iteration_s"]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5


def summary(rows):
    errors = [(r["predicted_s"] - r["measured_s"]) / r["measured_s"] for r in rows]
    return {
        "rows": len(rows),
        "mape": 100 * statistics.fmean(abs(e) for e in errors),
        "bias": 100 * statistics.fmean(errors),
        "max_error": 100 * max(abs(e) for e in errors),
        "spearman": spearman([r["predicted_s"] for r in rows], [r["measured_s"] for r in rows]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"),
                        help="the pipetwin binary (default: build/bin/pipetwin)")
    parser.add_argument("--rows", action="append",
                        help="a dataset (repeatable; default: pipeline_rows.csv). single_node_rows.csv holds the "
                             "rows with tensor or data parallelism")
    parser.add_argument("--csv", help="also write every row with its prediction and error here")
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    parser.add_argument("--worst", type=int, default=5, help="rows with the largest errors to list per split")
    parser.add_argument("--param", action="append", default=[],
                        help="extra key=value for every prediction, e.g. hardware.cost_model=roofline (repeatable)")
    args = parser.parse_args()
    if not os.access(args.pipetwin, os.X_OK):
        sys.exit(f"predict.py: no pipetwin binary at {args.pipetwin}; build it (scripts/build.sh) or pass --pipetwin")
    rows = []
    for path in args.rows or [os.path.join(HERE, "pipeline_rows.csv")]:
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    if not rows:
        sys.exit("predict.py: no rows to predict")
    print(f"predicting {len(rows)} rows with {args.pipetwin} ...", file=sys.stderr)
    for row in rows:
        row["measured_s"] = float(row["measured_s"])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for row, predicted in zip(rows, pool.map(lambda r: predict(args.pipetwin, r, args.param), rows)):
            row["predicted_s"] = predicted
            row["error_pct"] = 100 * (predicted - row["measured_s"]) / row["measured_s"]
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            writer.writerows(rows)
    splits = {name: [r for r in rows if r["split"] == name] for name in ("development", "held-out")}
    results = {name: summary(part) for name, part in splits.items() if part}
    results["all"] = summary(rows)
    kinds = sorted({parallelism_kind(r) for r in rows})
    by_kind = {}
    if len(kinds) > 1:
        for kind in kinds:
            for name, part in splits.items():
                chosen = [r for r in part if parallelism_kind(r) == kind]
                if len(chosen) >= 2:
                    by_kind[f"{kind}, {name}"] = summary(chosen)
    if args.json:
        print(json.dumps(dict(results, by_kind=by_kind) if by_kind else results, indent=2))
        return
    print(f"{'split':<12} {'rows':>5} {'MAPE %':>8} {'bias %':>8} {'max %':>8} {'Spearman':>9}")
    for name, s in results.items():
        print(f"{name:<12} {s['rows']:>5} {s['mape']:>8.1f} {s['bias']:>+8.1f} {s['max_error']:>8.1f} {s['spearman']:>9.3f}")
    if by_kind:
        print(f"\n{'parallelism, split':<24} {'rows':>5} {'MAPE %':>8} {'bias %':>8} {'max %':>8} {'Spearman':>9}")
        for name, s in by_kind.items():
            print(f"{name:<24} {s['rows']:>5} {s['mape']:>8.1f} {s['bias']:>+8.1f} {s['max_error']:>8.1f} "
                  f"{s['spearman']:>9.3f}")
    for name, part in splits.items():
        if not part or args.worst <= 0:
            continue
        print(f"\nlargest errors, {name}:")
        for r in sorted(part, key=lambda r: -abs(r["error_pct"]))[: args.worst]:
            print(f"  {r['id']:<40} measured {r['measured_s']:.4f} s, predicted {r['predicted_s']:.4f} s ({r['error_pct']:+.1f}%)")


if __name__ == "__main__":
    try:
        main()
    except (ValueError, RuntimeError) as error:  # a bad row or a failed prediction: say which
        sys.exit(f"predict.py: {error}")
