#!/usr/bin/env python3
"""Re-predict a stored GPU validation on a machine without a GPU (docs/cuda-executor.md).

Reads a `pipetwin validate --json` file and calibration tables kept beside it (as in
experiments/gpu/h100-2026-11-24/), predicts every row again with `pipetwin simulate
--calibration` (the model as it is now), and prints the prediction against the file's measured
step time. Rows whose P has a table taken with P copies at once (--together P=FILE) are predicted
as `validate` predicts them: from a table between the one taken alone and that one, weighted by
the busy concurrency of the prediction from the table taken alone ((c - 1) / (P - 1), c the mean
number of processors running a task while one does). Where that table was timed in a pipeline
(its `pipeline_schedule`), the weight is the row's share over that schedule's, at most 1, and a
table with a co-run slope is scaled by it instead of blended (docs/formats.md). Other rows use
the table taken alone. Where the table taken alone measured what a larger footprint costs
(`footprint_slowdown`), each row's table is then scaled by the bytes its graph holds while it
computes (`step_compute_peak_memory_bytes`) against those the table was timed at, as validate
scales it.

    python3 experiments/gpu/repredict.py --pipetwin build/bin/pipetwin \\
        --validation experiments/gpu/h100-2026-11-24/validate-resnet56-p-tables.json \\
        --alone experiments/gpu/h100-2026-11-24/calibration-resnet56-alone.json \\
        --together 8=experiments/gpu/h100-2026-11-24/calibration-resnet56-8-at-once.json

The calibrations of a validation were taken in its own rounds and are not in its JSON: a
re-prediction from tables kept beside it differs from the file's own prediction by the machine's
drift between them, as well as by whatever the model changed. A validation run with
`--tables-out DIR` kept them, one per round and processor count (MODEL-roundR-pP.json); with
`--tables DIR` each row is predicted again from each round's tables and paired with that round's
run, as `validate` pairs them (the error is the median over rounds of prediction over run, minus
1), each round's footprint slowdown the median of the rounds' up to it as validate takes it, so
that with the model unchanged the file's own errors come back:

    python3 experiments/gpu/repredict.py --validation validate-resnet56.json --tables tables-resnet56
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

KINDS = ("F_s", "BA_s", "BW_s", "B_s", "U_s")
# A layer's times a table may lack (absent or -1: not measured); blended only where both tables
# have them (calibration_blend.cpp).
OPTIONAL = ("F_one_layer_s", "BW_dW_one_layer_s", "BA_to_linear_again_s", "BA_to_linear_one_layer_s",
            "BW_to_linear_again_s", "BA_fixed_s", "BA_dx_one_layer_s", "assembly_s")


def simulate(pipetwin, validation, schedule, processors, calibration, params=()):
    """The simulator's prediction of one row, with every task's start and end."""
    # The hardware profile validate built its graphs on (files before 2026-11-27 do not say: its
    # default for the device), so that task costs round to the same clock's cycles.
    hardware = validation.get("hardware", "cpu-core" if validation.get("device") == "cpu" else "h100")
    command = [pipetwin, "simulate", "-m", validation["model"], "-s", schedule, "-p", str(processors),
               "--hardware", hardware, "--microbatches", str(validation["microbatches"]),
               "--minibatches", str(validation["minibatches"]), "--calibration", calibration, "--json", "--task-times"]
    for param in params:
        command += ["--param", param]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"repredict: {' '.join(command)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def busy_concurrency(result):
    """The integral of N squared over the integral of N, N the processors running a task."""
    changes = []
    for task in result["task_times"]:
        if task["placement"] == "processor" and task["end_cycles"] > task["start_cycles"]:
            changes += [(task["start_cycles"], 1), (task["end_cycles"], -1)]
    changes.sort()
    running = busy = busy_squared = 0
    for i, (cycle, change) in enumerate(changes):
        running += change
        if i + 1 < len(changes):
            span = changes[i + 1][0] - cycle
            busy += running * span
            busy_squared += running * running * span
    return busy_squared / busy if busy > 0 else 0.0


def blend(alone, together, weight):
    """Every compute time (and the gap between tasks) linear between the two tables; links and copies are `together`'s."""
    mixed = json.loads(json.dumps(together))
    mix = lambda a, b: a + weight * (b - a)
    for key in ("task_overhead_s", "layer_overhead_s", "input_load_s"):
        mixed[key] = mix(alone.get(key, 0.0), together.get(key, 0.0))
    kinds = set(alone.get("kind_overhead_s", {})) | set(together.get("kind_overhead_s", {}))
    of = lambda table, kind: table.get("kind_overhead_s", {}).get(kind, table.get("task_overhead_s", 0.0))
    mixed["kind_overhead_s"] = {kind: mix(of(alone, kind), of(together, kind)) for kind in sorted(kinds)}
    # Split tasks over a stage: their own where a table timed them, else the kind's.
    stage_kinds = set(alone.get("stage_kind_overhead_s", {})) | set(together.get("stage_kind_overhead_s", {}))
    stage_of = lambda table, kind: table.get("stage_kind_overhead_s", {}).get(kind, of(table, kind))
    mixed["stage_kind_overhead_s"] = {kind: mix(stage_of(alone, kind), stage_of(together, kind)) for kind in sorted(stage_kinds)}
    # The gap between tasks: mixed where both tables timed it, else the one that did.
    gaps = [table.get("task_gap_s", -1) for table in (alone, together)]
    if min(gaps) >= 0:
        mixed["task_gap_s"] = mix(*gaps)
    elif gaps[0] >= 0:
        mixed["task_gap_s"] = gaps[0]
    if alone.get("timed_footprint_bytes", 0) > 0 and together.get("timed_footprint_bytes", 0) > 0:
        # std::llround's halves away from zero, not Python's round to even
        mixed["timed_footprint_bytes"] = math.floor(mix(alone["timed_footprint_bytes"], together["timed_footprint_bytes"]) + 0.5)
    by_name = {layer["name"]: layer for layer in alone["layers"]}
    for layer in mixed["layers"]:
        theirs = by_name[layer["name"]]
        for kind in KINDS:
            if kind in layer and kind in theirs:
                layer[kind] = mix(theirs[kind], layer[kind])
        for key in OPTIONAL:
            both = layer.get(key, -1) >= 0 and theirs.get(key, -1) >= 0
            layer[key] = mix(theirs[key], layer[key]) if both else -1
    return mixed


def scaled(table, factor):
    """Every compute time times `factor`; links and copies as they are (with_compute_scaled)."""
    out = json.loads(json.dumps(table))
    for key in ("task_overhead_s", "layer_overhead_s", "input_load_s"):
        if out.get(key, 0) > 0:
            out[key] *= factor
    for key in ("kind_overhead_s", "stage_kind_overhead_s"):
        out[key] = {kind: s * factor for kind, s in out.get(key, {}).items()}
    for layer in out["layers"]:
        for key in KINDS + OPTIONAL:
            if layer.get(key, -1) > 0:
                layer[key] *= factor
    return out


def footprint_slowdown_at(alone, footprint_bytes):
    """The slowdown the table taken alone measured for a footprint (Calibration::footprint_slowdown_at)."""
    slowdown = alone.get("footprint_slowdown", -1)
    small, large = alone.get("footprint_small_bytes", 0), alone.get("footprint_large_bytes", 0)
    if slowdown < 0 or large <= small:
        return 0.0
    return slowdown * min(1.0, max(0.0, (footprint_bytes - small) / (large - small)))


def with_footprint(args, validation, schedule, processors, alone, table, predicted, folder):
    """The row's step once its table takes what the bytes its graph holds cost (validate's build:
    Calibration::footprint_factor), given the prediction from that table; and that factor."""
    timed_bytes = table.get("timed_footprint_bytes", 0)
    footprint_bytes = max(predicted["step_compute_peak_memory_bytes"], default=0)
    if not alone.get("footprint_slowdown", -1) > 0 or timed_bytes <= 0 or footprint_bytes <= 0:
        return predicted["iteration_s"], 1.0
    factor = (1 + footprint_slowdown_at(alone, footprint_bytes)) / (1 + footprint_slowdown_at(alone, timed_bytes))
    if factor == 1:
        return predicted["iteration_s"], factor
    scaled_path = os.path.join(folder, "footprint.json")
    with open(scaled_path, "w") as f:
        json.dump(scaled(table, factor), f)
    return simulate(args.pipetwin, validation, schedule, processors, scaled_path, args.param)["iteration_s"], factor


def predict_row(args, validation, schedule, processors, alone, together, folder):
    """One row's step from a table taken alone and, for P > 1, one taken with P at once (or None),
    as validate predicts it; returns (step_s, weight or None, footprint factor)."""
    alone_path = os.path.join(folder, "alone.json")
    blended_path = os.path.join(folder, "blended.json")
    with open(alone_path, "w") as f:
        json.dump(alone, f)
    predicted = simulate(args.pipetwin, validation, schedule, processors, alone_path, args.param)
    if processors == 1 or together is None:
        step_s, factor = with_footprint(args, validation, schedule, processors, alone, alone, predicted, folder)
        return step_s, None, factor
    concurrency = busy_concurrency(predicted)
    weight = min(1.0, max(0.0, (concurrency - 1) / (processors - 1)))
    timed_in = together.get("pipeline_schedule", "")
    if timed_in:  # timed in a pipeline: the row's share over that schedule's, at most 1
        pipeline = simulate(args.pipetwin, validation, timed_in, processors, alone_path, args.param)
        share = min(1.0, max(0.0, (busy_concurrency(pipeline) - 1) / (processors - 1)))
        weight = min(1.0, weight / share) if share > 0 else 1.0
    slope, timed_share = together.get("co_run_slope", -1), together.get("co_run_share", -1)
    if timed_in and slope >= 0 and timed_share >= 0:  # the table scaled by overlap
        chosen = scaled(together, (1 + slope * timed_share * weight) / (1 + slope * timed_share))
    elif weight == 1:
        chosen = together
    else:
        chosen = blend(alone, together, weight)
    with open(blended_path, "w") as f:
        json.dump(chosen, f)
    predicted = simulate(args.pipetwin, validation, schedule, processors, blended_path, args.param)
    step_s, factor = with_footprint(args, validation, schedule, processors, alone, chosen, predicted, folder)
    return step_s, weight, factor


def median(values):
    """The median as validate takes it: the upper of the two middle values."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipetwin", default="build/bin/pipetwin")
    parser.add_argument("--validation", required=True, help="a `pipetwin validate --json` file")
    parser.add_argument("--alone", help="the calibration table taken alone")
    parser.add_argument("--together", action="append", default=[], metavar="P=FILE",
                        help="the table taken with P copies at once (repeatable)")
    parser.add_argument("--tables", metavar="DIR",
                        help="instead of --alone and --together: the folder `validate --tables-out` filled, a table "
                             "per round and processor count; each round predicted from its own tables")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a model parameter the validation ran with (repeatable), as validate's --param")
    parser.add_argument("--handoff-us", type=float, metavar="US",
                        help="for tables that did not time the handoff apart from the copy latency (CUDA tables "
                             "before 2026-11-24): assume one of US microseconds, so that the links' latency is "
                             "split as a table with `handoff_s` splits it (docs/design.md, \"Links\")")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.handoff_us is not None and args.handoff_us < 0:
        sys.exit("repredict: --handoff-us must be >= 0")
    if (args.tables is None) == (args.alone is None):
        sys.exit("repredict: give --alone (and --together) or --tables, one of the two")
    if args.tables is not None and args.together:
        sys.exit("repredict: --together goes with --alone; --tables holds every round's tables")

    def table(path):
        loaded = json.load(open(path))
        if args.handoff_us is not None and loaded.get("handoff_s", -1) < 0:
            if 2 * args.handoff_us * 1e-6 > loaded.get("copy_latency_s", -1):
                sys.exit(f"repredict: two handoffs of {args.handoff_us} us are more than {path}'s copy latency")
            loaded["handoff_s"] = args.handoff_us * 1e-6
        return loaded

    validation = json.load(open(args.validation))
    # Per round (one round for --alone): the table taken alone and those with P at once.
    rounds = []
    if args.tables is not None:
        model = validation["model"]
        for r in range(1, 10 ** 4):
            alone_path = os.path.join(args.tables, f"{model}-round{r}-p1.json")
            if not os.path.exists(alone_path):
                break
            together = {}
            for row in validation["rows"]:
                path = os.path.join(args.tables, f"{model}-round{r}-p{row['processors']}.json")
                if row["processors"] > 1 and os.path.exists(path):
                    together[row["processors"]] = table(path)
            rounds.append((table(alone_path), together))
        if not rounds:
            sys.exit(f"repredict: no {model}-round1-p1.json in {args.tables}")
        # validate scales a round's rows by the median of the one-processor tables' footprint
        # slowdowns up to that round (docs/executor.md, "What a footprint costs"), not by the
        # round's own.
        slowdowns = []
        for alone, _ in rounds:
            if alone.get("footprint_slowdown", -1) >= 0:
                slowdowns.append(alone["footprint_slowdown"])
            if slowdowns:
                alone["footprint_slowdown"] = median(slowdowns)
    else:
        together = {}
        for item in args.together:
            p, _, path = item.partition("=")
            if not p.isdigit() or not path:
                sys.exit(f"repredict: --together wants P=FILE, got '{item}'")
            together[int(p)] = table(path)
        rounds.append((table(args.alone), together))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for row in validation["rows"]:
            schedule, processors = row["schedule"], row["processors"]
            steps, weight, factor = [], None, 1.0
            for alone, together in rounds:
                step_s, weight, factor = predict_row(args, validation, schedule, processors, alone,
                                                     together.get(processors), folder)
                steps.append(step_s)
            if args.tables is not None:  # paired with the rounds' runs, as validate pairs them
                measured = row["measured_rounds_s"]
                if len(measured) != len(steps):
                    sys.exit(f"repredict: {len(steps)} rounds of tables for {len(measured)} rounds of runs")
                error = median([p / m for p, m in zip(steps, measured)]) - 1
            else:
                error = steps[0] / row["measured_step_s"] - 1
            rows.append({"schedule": schedule, "processors": processors, "co_run_weight": weight,
                         "footprint_factor": factor,
                         "repredicted_step_s": median(steps), "measured_step_s": row["measured_step_s"],
                         "file_predicted_step_s": row["predicted_step_s"], "error": error,
                         "file_error": row["step_error"]})
    mean = sum(abs(r["error"]) for r in rows) / len(rows)
    if args.json:
        print(json.dumps({"rows": rows, "mean_abs_error": mean}, indent=1))
        return
    source = (f"{len(rounds)} rounds of tables in {args.tables}" if args.tables is not None else
              os.path.basename(args.alone) + (f" and tables at once for P = {', '.join(map(str, sorted(rounds[0][1])))}"
                                              if rounds[0][1] else ""))
    print(f"{validation['model']}: {len(rows)} rows re-predicted from {source}")
    print(f"{'schedule':>14} {'P':>2} {'weight':>6} {'repredicted_ms':>14} {'measured_ms':>11} {'error':>7} "
          f"{'file_ms':>9} {'file_error':>10}")
    for r in rows:
        weight = "-" if r["co_run_weight"] is None else f"{r['co_run_weight']:.2f}"
        print(f"{r['schedule']:>14} {r['processors']:>2} {weight:>6} {r['repredicted_step_s'] * 1e3:14.2f} "
              f"{r['measured_step_s'] * 1e3:11.2f} {r['error'] * 100:+6.1f}% {r['file_predicted_step_s'] * 1e3:9.2f} "
              f"{r['file_error'] * 100:+9.1f}%")
    print(f"mean |error| {mean * 100:.1f}% over {len(rows)} rows")


if __name__ == "__main__":
    main()
