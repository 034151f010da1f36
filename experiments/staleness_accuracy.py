#!/usr/bin/env python3
"""Staleness and accuracy on real data (issue 5): lenet5 and an MLP trained on Fashion-MNIST by the
CPU executor, nonpipelined and under pipelined schedules with stale or delayed weights, the same
number of epochs each; test accuracy after training. Writes experiments/results/staleness-accuracy.csv
and .md, and the section of docs/results.md between the staleness-accuracy markers.

Every accuracy comes from `pipetwin run --device cpu --test --json` (real training, real data).

    python3 experiments/staleness_accuracy.py [--epochs 2] [--pipetwin build/bin/pipetwin]
Needs Debian's dataset-fashion-mnist. Takes several minutes on 2 cores.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")
BEGIN, END = "<!-- staleness-accuracy: begin -->", "<!-- staleness-accuracy: end -->"

# (model, model params, layers). The MLP has four dense layers so that pipelining can go deep.
MODELS = [("lenet5", ["batch=64"], 5), ("mlp", ["widths=784,256,256,256,10", "batch=64"], 4)]


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


def run(pipetwin, model, model_params, schedule, procs, params, microbatches, epochs, lr, momentum):
    command = [pipetwin, "run", "--device", "cpu", "--model", model, "--schedule", schedule, "--procs", str(procs),
               "--microbatches", str(microbatches), "--epochs", str(epochs), "--test", "--json", "--quiet",
               "--lr", str(lr), "--momentum", str(momentum)]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"))
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--from-csv", action="store_true",
                        help="rebuild the markdown from experiments/results/staleness-accuracy.csv without training")
    args = parser.parse_args()
    if not args.from_csv and not os.access(args.pipetwin, os.X_OK):
        sys.exit(f"error: {args.pipetwin} not found; build first (scripts/build.sh)")
    os.makedirs(RESULTS, exist_ok=True)
    rows = []
    if args.from_csv:
        with open(os.path.join(RESULTS, "staleness-accuracy.csv"), newline="") as f:
            for r in csv.DictReader(f):
                r = {k: v for k, v in r.items() if v != ""}
                for key in ("test_accuracy", "test_loss", "final_train_loss"):
                    if key in r:
                        r[key] = float(r[key])
                rows.append(r)
    for model, model_params, layers in ([] if args.from_csv else MODELS):
        for label, schedule, procs, params, microbatches in configurations(layers):
            print(f"== {model}: {label} ({schedule}, P={procs})", flush=True)
            result, seconds = run(args.pipetwin, model, model_params, schedule, procs, params, microbatches,
                                  args.epochs, args.lr, args.momentum)
            if "error" in result:
                print("   error:", result["error"], flush=True)
                rows.append({"model": model, "configuration": label, "schedule": schedule, "P": procs,
                             "error": result["error"]})
                continue
            rows.append({"model": model, "configuration": label, "schedule": schedule, "P": procs,
                         "test_accuracy": result["test_accuracy"], "test_loss": result["test_loss"],
                         "final_train_loss": result["minibatch_loss"][-1], "steps": result["minibatches"],
                         "wall_s": round(seconds, 1)})
            print(f"   test accuracy {100 * result['test_accuracy']:.2f}%  ({seconds:.0f} s)", flush=True)
    columns = ["model", "configuration", "schedule", "P", "steps", "test_accuracy", "test_loss", "final_train_loss",
               "wall_s", "error"]
    if not args.from_csv:
        with open(os.path.join(RESULTS, "staleness-accuracy.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
    lines = [BEGIN, "## 6. Staleness and accuracy on Fashion-MNIST (CPU executor, real training)", "",
             "Seed (Zhang & Abdelrahman): pipelining only early layers costs little accuracy; pipelining deep "
             "costs a lot; the hybrid (pipelined, then nonpipelined) recovers it.", "",
             f"Command: `python3 experiments/staleness_accuracy.py --epochs {args.epochs:g}`. "
             f"Each run: `pipetwin run --device cpu --test`, {args.epochs:g} epochs of the 60000 training images, "
             f"one update per 64 samples (batch 64; `--microbatches 1` but for 2BW's 4), SGD lr {args.lr:g}, momentum "
             f"{args.momentum:g}, same initial weights and sample order; accuracy on the 10000 test images.", "",
             "| model | configuration | schedule | P | steps | test accuracy | test loss | last train loss |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['configuration']} | {r['schedule']} | {r['P']} | error: {r['error']} | | | |")
        else:
            lines.append(f"| {r['model']} | {r['configuration']} | {r['schedule']} | {r['P']} | {r['steps']} | "
                         f"{100 * r['test_accuracy']:.2f}% | {r['test_loss']:.4f} | {r['final_train_loss']:.4f} |")
    lines += ["", "What we see (computed from the table, against the nonpipelined run of the same model):", ""]
    lines += verdicts(rows)
    lines += ["", END, ""]
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
    print("wrote experiments/results/staleness-accuracy.csv, .md and the section of docs/results.md")


if __name__ == "__main__":
    main()
