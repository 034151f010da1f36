#!/usr/bin/env python3
"""Turns vTrain's published single-node measurements into this folder's row format.

vTrain (Bang et al., MICRO 2024; its repository's `data/ground_truth_single.csv`, MIT licence)
publishes 1,440 measured iteration times of GPT models trained with Megatron-DeepSpeed on one node
of eight A100 SXM GPUs: fp16 with fp32 master weights, Adam, every block's activations checkpointed,
1F1B, under every split of 2, 4 and 8 GPUs into tensor (t), data (d) and pipeline (p) parallelism.
This script writes them as rows (README.md describes the columns), each with its `source_row` (its
line in that file) and its split:

  - pipeline_rows.csv: the 160 rows with t = d = 1 (pipeline parallelism only);
  - single_node_rows.csv: the 1,280 rows with t > 1 or d > 1.

A row is `held-out` when the first hexadecimal digit of the SHA-256 of its `id` is below 8, else
`development`: fixed by the configuration alone, before anything is predicted.

    experiments/validation/import_vtrain.py ground_truth_single.csv --pipeline-only --check pipeline_rows.csv
    experiments/validation/import_vtrain.py ground_truth_single.csv --parallel-only -o single_node_rows.csv
"""
import argparse
import csv
import hashlib
import io
import sys

COLUMNS = ["id", "source", "source_row", "gpu", "gpus", "pipeline", "tensor", "data", "global_batch",
           "micro_batch", "hidden", "heads", "layers", "seq", "vocab", "precision", "optimizer", "recompute",
           "schedule", "measured_s", "split"]

# GPT-2's 50,257 tokens padded to a multiple of 128 (Megatron's --make-vocab-size-divisible-by).
VOCAB = 50304


def split_of(row_id):
    return "held-out" if int(hashlib.sha256(row_id.encode()).hexdigest()[0], 16) < 8 else "development"


def row_id(gpus, global_batch, micro_batch, hidden, heads, layers, seq, tensor, data, pipeline):
    parts = [f"gpt-h{hidden}-a{heads}-L{layers}-s{seq}-B{global_batch}-b{micro_batch}"]
    if tensor > 1:
        parts.append(f"tp{tensor}")
    parts.append(f"pp{pipeline}")
    if data > 1:
        parts.append(f"dp{data}")
    return "-".join(parts)


def convert(text):
    """vTrain's CSV text -> our rows, in its order."""
    lines = text.lstrip("\ufeff").splitlines()
    rows = []
    for number, fields in enumerate(csv.reader(lines), start=1):
        if number == 1:
            if not fields or not fields[0].lstrip("# ").startswith("GPUs"):
                raise ValueError("not vTrain's ground_truth_single.csv: the header does not start with '# GPUs'")
            continue
        if not fields:
            continue
        gpus, global_batch, micro_batch, hidden, heads, layers, seq, tensor, data, pipeline = map(int, fields[:10])
        if tensor * data * pipeline != gpus:
            raise ValueError(f"line {number}: t {tensor} x d {data} x p {pipeline} is not {gpus} GPUs")
        identifier = row_id(gpus, global_batch, micro_batch, hidden, heads, layers, seq, tensor, data, pipeline)
        rows.append({
            "id": identifier, "source": "vtrain-micro24", "source_row": number, "gpu": "a100", "gpus": gpus,
            "pipeline": pipeline, "tensor": tensor, "data": data, "global_batch": global_batch,
            "micro_batch": micro_batch, "hidden": hidden, "heads": heads, "layers": layers, "seq": seq,
            "vocab": VOCAB, "precision": "fp16", "optimizer": "adam", "recompute": "full", "schedule": "1f1b",
            "measured_s": f"{float(fields[10]) / 1000:.6f}", "split": split_of(identifier),
        })
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("two rows have the same configuration")
    return rows


def to_csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="vTrain's data/ground_truth_single.csv")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pipeline-only", action="store_true", help="the rows with t = d = 1")
    which.add_argument("--parallel-only", action="store_true", help="the rows with t > 1 or d > 1")
    parser.add_argument("-o", "--output", help="write the rows here (default: standard output)")
    parser.add_argument("--check", help="compare with this file instead of writing: same rows and splits")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        rows = convert(f.read())
    pipeline_only = lambda r: r["tensor"] == 1 and r["data"] == 1  # noqa: E731
    rows = [r for r in rows if pipeline_only(r) == args.pipeline_only]
    text = to_csv(rows)
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            theirs = list(csv.DictReader(f))
        ours = list(csv.DictReader(io.StringIO(text)))
        key = lambda r: r["id"]  # noqa: E731
        mismatched = [(a, b) for a, b in zip(sorted(ours, key=key), sorted(theirs, key=key))
                      if {k: a[k] for k in COLUMNS} != {k: b.get(k) for k in COLUMNS}]
        if len(ours) != len(theirs) or mismatched:
            for a, b in mismatched[:5]:
                print(f"differs: {a}\n     vs: {b}", file=sys.stderr)
            print(f"{args.check}: {len(theirs)} rows, {len(ours)} converted, {len(mismatched)} differ", file=sys.stderr)
            return 1
        print(f"{args.check}: all {len(ours)} rows and their splits as converted")
        return 0
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        held = sum(r["split"] == "held-out" for r in rows)
        print(f"{args.output}: {len(rows)} rows, {held} held-out, {len(rows) - held} development", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
