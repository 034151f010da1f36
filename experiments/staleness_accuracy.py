#!/usr/bin/env python3
"""Staleness and accuracy on real data: lenet5 and an MLP trained on Fashion-MNIST, and an MLP on
scikit-learn's handwritten digits, by the CPU executor, nonpipelined and under every asynchronous
schedule (stale, stashed, double-buffered or delayed weights), the same number of epochs each; test
accuracy after training. Writes experiments/results/staleness-accuracy[-digits].csv, staleness-accuracy.md
and the section of docs/results.md between the staleness-accuracy markers.

Every accuracy comes from `pipetwin run --device cpu --test --json` (real training, real data).

    python3 experiments/staleness_accuracy.py [--datasets fashion-mnist,digits] [--epochs 2]
Fashion-MNIST needs Debian's dataset-fashion-mnist; the digits need scikit-learn (pip), whose wheel
ships them (experiments/export_digits.py writes them as IDX files). Takes a few minutes on 2 cores.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")
BEGIN, END = "<!-- staleness-accuracy: begin -->", "<!-- staleness-accuracy: end -->"

# Per dataset: (model, model params, layers), the `pipetwin run` data options, the CSV name and
# the update size. The MLPs have four dense layers so that pipelining can go deep.
DATASETS = {
    "fashion-mnist": {"models": [("lenet5", ["batch=64"], 5), ("mlp", ["widths=784,256,256,256,10", "batch=64"], 4)],
                      "csv": "staleness-accuracy.csv", "title": "Fashion-MNIST (60000 training, 10000 test images)",
                      "test_images": 10000},
    "digits": {"models": [("mlp", ["widths=64,128,128,128,10", "batch=32"], 4)],
               "csv": "staleness-accuracy-digits.csv",
               "title": "handwritten digits (scikit-learn's 8x8 UCI digits: 1437 training, 360 test images)",
               "test_images": 360},
}


def configurations(layers):
    """(label, schedule, processors, schedule params, microbatches): the seed's comparison, plus every
    other asynchronous schedule (PipeDream, PipeDream-2BW, LayerPipe, PipeFB, layer-wise merging)."""
    deep = ",".join(str(i) for i in range(1, layers))
    return [("nonpipelined", "sequential", 1, [], 1),
            ("stale weights, early PPV (after layer 1)", "stale-weights", 2, ["ppv=1"], 1),
            ("stale weights, PPV after layers 1, 2", "stale-weights", 3, ["ppv=1,2"], 1),
            (f"stale weights, deep PPV ({deep})", "stale-weights", layers, [f"ppv={deep}"], 1),
            ("hybrid: deep PPV for half the steps, then nonpipelined", "stale-weights", layers,
             [f"ppv={deep}", "hybrid=0.5"], 1),
            ("pipedream (weight stashing)", "pipedream", layers, [], 1),
            ("layerpipe (delayed gradients)", "layerpipe", layers, [], 1),
            # 2BW needs as many microbatches as processors: 4 of 16 samples, one update per 64.
            ("pipedream-2bw (double-buffered weights, 4 microbatches)", "pipedream-2bw", 4, [], 4),
            ("pipefb (2 stages, F-node and B-node each)", "pipefb", 4, [], 1),
            ("layer-wise merging (asynchronous 1F1B)", "layerwise-merge", layers, [], 1)]


def run(pipetwin, model, model_params, schedule, procs, params, microbatches, epochs, lr, momentum, data_options):
    command = [pipetwin, "run", "--device", "cpu", "--model", model, "--schedule", schedule, "--procs", str(procs),
               "--microbatches", str(microbatches), "--epochs", str(epochs), "--test", "--json", "--quiet",
               "--lr", str(lr), "--momentum", str(momentum)] + data_options
    for p in model_params + params:
        command += ["--param", p]
    begin = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().replace("pipetwin: error: ", "")}, time.time() - begin
    return json.loads(done.stdout), time.time() - begin


def verdicts(rows):
    """One line per model: the accuracy change of early, deep and hybrid pipelining, and whether the
    seed's pattern (small drop early, large drop deep, hybrid recovering) holds."""
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        def find(prefix):
            return next((r for r in mine if r["configuration"].startswith(prefix)), None)
        base, early, deep, hybrid = find("nonpipelined"), find("stale weights, early"), find("stale weights, deep"), \
            find("hybrid")
        def change(r):
            if r is None or "error" in r:
                return None
            return 100 * (float(r["test_accuracy"]) - float(base["test_accuracy"]))
        def words(r):
            c = change(r)
            return "diverged" if c is None else f"{c:+.2f} points"
        e, d, h = change(early), change(deep), change(hybrid)
        small_early = e is not None and e > -1.0
        large_deep = d is None or (e is not None and d < e - 0.5)
        recovers = h is not None and (d is None or h > d)
        verdict = "the seed's pattern holds" if small_early and large_deep and recovers else \
            "the seed's pattern does not fully hold (" + ", ".join(
                w for w, ok in (("early drop not small", small_early), ("deep drop not larger", large_deep),
                                ("hybrid does not recover", recovers)) if not ok) + ")"
        out.append(f"- **{model}**: early PPV {words(early)}, deep PPV {words(deep)}, hybrid {words(hybrid)}; "
                   f"{verdict}.")
    return out


def train_all(args, dataset, epochs, data_options):
    rows = []
    for model, model_params, layers in DATASETS[dataset]["models"]:
        for label, schedule, procs, params, microbatches in configurations(layers):
            print(f"== {dataset}, {model}: {label} ({schedule}, P={procs})", flush=True)
            result, seconds = run(args.pipetwin, model, model_params, schedule, procs, params, microbatches,
                                  epochs, args.lr, args.momentum, data_options)
            row = {"model": model, "configuration": label, "schedule": schedule, "P": procs}
            if "error" in result:
                print("   error:", result["error"], flush=True)
                rows.append(dict(row, error=result["error"]))
                continue
            rows.append(dict(row, test_accuracy=result["test_accuracy"], test_loss=result["test_loss"],
                             final_train_loss=result["minibatch_loss"][-1], steps=result["minibatches"],
                             epochs=epochs, wall_s=round(seconds, 1)))
            print(f"   test accuracy {100 * result['test_accuracy']:.2f}%  ({seconds:.0f} s)", flush=True)
    return rows


COLUMNS = ["model", "configuration", "schedule", "P", "steps", "epochs", "test_accuracy", "test_loss",
           "final_train_loss", "wall_s", "error"]


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r = {k: v for k, v in r.items() if v not in ("", None)}
            for key in ("test_accuracy", "test_loss", "final_train_loss"):
                if key in r:
                    r[key] = float(r[key])
            rows.append(r)
    return rows


def table_lines(rows):
    lines = ["| model | configuration | schedule | P | steps | test accuracy | test loss | last train loss |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['configuration']} | {r['schedule']} | {r['P']} | error: {r['error']} | | | |")
        else:
            lines.append(f"| {r['model']} | {r['configuration']} | {r['schedule']} | {r['P']} | {r['steps']} | "
                         f"{100 * r['test_accuracy']:.2f}% | {r['test_loss']:.4f} | {r['final_train_loss']:.4f} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"))
    parser.add_argument("--datasets", default="fashion-mnist,digits",
                        help="comma-separated: fashion-mnist, digits (the others are kept from their CSVs)")
    parser.add_argument("--epochs", type=float, default=2, help="epochs of Fashion-MNIST")
    parser.add_argument("--digits-epochs", type=float, default=20, help="epochs of the digits (45 updates each)")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--from-csv", action="store_true",
                        help="rebuild the markdown from the CSVs in experiments/results without training")
    args = parser.parse_args()
    chosen = [d for d in args.datasets.split(",") if d]
    for d in chosen:
        if d not in DATASETS:
            sys.exit(f"error: unknown dataset {d!r} (choose from {', '.join(DATASETS)})")
    if not args.from_csv and not os.access(args.pipetwin, os.X_OK):
        sys.exit(f"error: {args.pipetwin} not found; build first (scripts/build.sh)")
    os.makedirs(RESULTS, exist_ok=True)
    for dataset in ([] if args.from_csv else chosen):
        if dataset == "digits":
            with tempfile.TemporaryDirectory() as folder:
                export = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "export_digits.py"), folder],
                                        capture_output=True, text=True)
                if export.returncode != 0:
                    sys.exit(export.stderr.strip() or "error: export_digits.py failed")
                rows = train_all(args, dataset, args.digits_epochs, ["--data", "idx", "--data-dir", folder])
        else:
            rows = train_all(args, dataset, args.epochs, [])
        with open(os.path.join(RESULTS, DATASETS[dataset]["csv"]), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
    lines = [BEGIN, "## 6. Staleness and accuracy on real data (CPU executor, real training)", "",
             "Seed (Zhang & Abdelrahman): pipelining only early layers costs little accuracy; pipelining deep "
             "costs a lot; the hybrid (pipelined, then nonpipelined) recovers it. Every asynchronous schedule is "
             "trained beside it.", "",
             "Command: `python3 experiments/staleness_accuracy.py`. Each run: `pipetwin run --device cpu --test`, "
             f"SGD lr {args.lr:g}, momentum {args.momentum:g}, one update per minibatch (`--microbatches 1`, but "
             "4 for PipeDream-2BW, which needs as many as processors), the same initial weights and sample order; "
             "accuracy on the test images after the same number of epochs.", ""]
    for dataset, spec in DATASETS.items():
        path = os.path.join(RESULTS, spec["csv"])
        if not os.path.exists(path):
            continue
        rows = read_rows(path)
        epochs = next((r["epochs"] for r in rows if "epochs" in r), "")
        lines += [f"### {spec['title']}" + (f", {epochs} epochs" if epochs else ""), ""] + table_lines(rows)
        lines += ["", "What we see (computed from the table, against the nonpipelined run of the same model; one "
                  f"test image is {100 / spec['test_images']:.2f} points, so smaller changes are noise):", ""]
        lines += verdicts(rows) + [""]
    lines += [END, ""]
    section = "\n".join(lines)
    with open(os.path.join(RESULTS, "staleness-accuracy.md"), "w") as f:
        f.write(section)
    docs = os.path.join(ROOT, "docs", "results.md")
    text = open(docs, encoding="utf-8").read() if os.path.exists(docs) else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(docs, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote experiments/results/staleness-accuracy*.csv, .md and the section of docs/results.md")


if __name__ == "__main__":
    main()
