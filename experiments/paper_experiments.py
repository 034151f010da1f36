#!/usr/bin/env python3
"""The seed papers' experiments in simulation (issue 4): each writes a CSV and a PNG under
experiments/results/ and a markdown section; `all` runs the five and writes docs/results.md.

Every number comes from `pipetwin simulate --json` or `pipetwin sweep --json` (the SystemC model);
nothing here is typed in except the papers' claims (the research notes behind them are summarised
in docs/design.md).

    python3 experiments/paper_experiments.py all            # everything, then docs/results.md
    python3 experiments/paper_experiments.py layerpipe      # one experiment
Options: --pipetwin PATH (default build/bin/pipetwin), --jobs N (default: CPU count).
PNG figures need matplotlib (pip install matplotlib); without it the CSVs and tables are still
written and the figures are skipped with a message.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")


class Runner:
    def __init__(self, pipetwin, jobs):
        self.pipetwin = pipetwin
        self.jobs = jobs

    def _graph_command(self, subcommand, model, schedule, hardware, procs, microbatches, minibatches, params):
        command = [self.pipetwin, subcommand, "--model", model, "--schedule", schedule, "--hardware", hardware,
                   "--procs", str(procs), "--microbatches", str(microbatches), "--minibatches", str(minibatches)]
        for p in params:
            command += ["--param", p]
        return command

    def simulate(self, model, schedule, hardware, procs, microbatches, minibatches, params=()):
        """One simulation; returns the JSON result, or {'error': message}."""
        command = self._graph_command("simulate", model, schedule, hardware, procs, microbatches, minibatches,
                                      params) + ["--json"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": done.stderr.strip().replace("pipetwin: error: ", "")}
        return json.loads(done.stdout)

    def schedule(self, model, schedule, hardware, procs, microbatches, minibatches, params=()):
        """`pipetwin schedule -o -`: the task graph as JSON."""
        command = self._graph_command("schedule", model, schedule, hardware, procs, microbatches, minibatches,
                                      params) + ["-o", "-"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
        return json.loads(done.stdout)

    def parameters(self, model):
        """The model's parameter count (`pipetwin models --json`)."""
        done = subprocess.run([self.pipetwin, "models", "--json"], capture_output=True, text=True, check=True)
        return next(m["parameters"] for m in json.loads(done.stdout) if m["name"] == model)

    def sweep(self, model, schedules, hardware, procs, microbatches, minibatches, baseline="sequential"):
        """`pipetwin sweep --json`: the project's one sweep (its rows and its speedup over
        `baseline` at P = 1), run in worker processes."""
        command = [self.pipetwin, "sweep", "--model", model, "--schedules", ",".join(schedules),
                   "--hardware", hardware, "--procs", ",".join(str(p) for p in procs),
                   "--microbatches", str(microbatches), "--minibatches", str(minibatches),
                   "--baseline", baseline, "--jobs", str(self.jobs), "--json"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
        return json.loads(done.stdout)

    def many(self, configs):
        """Simulations in parallel, results in the order of `configs` (tuples of simulate's args)."""
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(lambda c: self.simulate(*c), configs))


def write_csv(name, rows):
    path = os.path.join(RESULTS, name + ".csv")
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print("wrote", os.path.relpath(path, ROOT))


def plot(name, draw):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"skipped {name}.png: matplotlib is not installed (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    draw(ax)
    fig.tight_layout()
    path = os.path.join(RESULTS, name + ".png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote", os.path.relpath(path, ROOT))


def table(rows, columns):
    """A markdown table of `rows` (dicts) with (key, header, format) columns."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.format(r[k]) if r[k] != "" else "-" for k, _, fmt in columns) + " |")
    return "\n".join(lines)


def per_step(result):
    return result["minibatches"] * result["microbatches"]


# 1. LayerPipe vs PipeDream -------------------------------------------------------------------
LAYERPIPE_MODELS = ["lenet5", "alexnet", "vgg16", "resnet20", "resnet56", "resnet110", "mlp"]
# The paper's abstract clock-cycle model, systolic-array processors (each task's cycles computed by
# the simulator's systolic-array modules from the layers' GEMMs), and a GPU.
LAYERPIPE_HARDWARE = ("unit", "systolic", "h100")


def pipedream_at_most(runner, model, hardware, procs, steps):
    """PipeDream with its planner's partition on P processors, or on as many stages as the
    network can be cut into when that is fewer (PipeDream would replicate stages instead;
    replication is not modelled)."""
    for p in range(procs, 0, -1):
        r = runner.simulate(model, "pipedream", hardware, p, 1, steps)
        if "error" not in r:
            return r
    raise RuntimeError(f"pipedream cannot run {model}")


def experiment_layerpipe(runner):
    steps = 40
    configs = [(m, h, p) for h in LAYERPIPE_HARDWARE for m in LAYERPIPE_MODELS for p in (7, 8, 9)]
    layerpipe = runner.many([(m, "layerpipe", h, p, 1, steps) for m, h, p in configs])
    with concurrent.futures.ThreadPoolExecutor(runner.jobs) as pool:
        pipedream = list(pool.map(lambda c: pipedream_at_most(runner, c[0], c[1], c[2], steps), configs))
    rows = []
    for (m, h, p), lp, pd in zip(configs, layerpipe, pipedream):
        if "error" in lp:
            raise RuntimeError(f"layerpipe {m} {h} P={p}: {lp['error']}")
        rows.append({"hardware": h, "model": m, "processors": p, "pipedream_stages": pd["processors"],
                     "pipedream_cycles": pd["iteration_cycles"], "layerpipe_cycles": lp["iteration_cycles"],
                     "speedup": pd["iteration_cycles"] / lp["iteration_cycles"],
                     "pipedream_bytes": pd["total_link_bytes"] / per_step(pd),
                     "layerpipe_bytes": lp["total_link_bytes"] / per_step(lp)})
    write_csv("layerpipe_vs_pipedream", rows)

    def draw(ax):
        for h, marker in (("unit", "o"), ("systolic", "^"), ("h100", "s")):
            xs = [f"{r['model']}\nP={r['processors']}" for r in rows if r["hardware"] == h]
            ax.plot(range(len(xs)), [r["speedup"] for r in rows if r["hardware"] == h], marker, label=h)
        ax.set_xticks(range(len(xs)), xs, rotation=90, fontsize=6)
        ax.axhline(1.25, ls="--", c="gray", label="paper: 1.25x average")
        ax.set_ylabel("LayerPipe speedup over PipeDream")
        ax.legend()
    plot("layerpipe_vs_pipedream", draw)

    lines = ["## 1. LayerPipe vs PipeDream, P = 7, 8, 9",
             "",
             "Paper (LayerPipe, ICCAD 2021, abstract): **25% faster on average, upwards of 80% at best, with 7 to 9 "
             "processors, with less communication** than PipeDream.",
             "",
             "Command: `python3 experiments/paper_experiments.py layerpipe`. One microbatch per step (each step its "
             f"own update), {steps} steps, default batch per network; cycles per step in steady state. PipeDream uses "
             "its planner's balanced partition over P stages, or as many as the network can be cut into "
             "(`pipedream_stages`). Bytes: all link traffic per step.", ""]
    for h in LAYERPIPE_HARDWARE:
        sub = [r for r in rows if r["hardware"] == h]
        speedups = [r["speedup"] for r in sub]
        average = sum(speedups) / len(speedups)
        best = max(sub, key=lambda r: r["speedup"])
        less = sum(1 for r in sub if r["layerpipe_bytes"] < r["pipedream_bytes"])
        lines += [f"### `{h}` hardware", "",
                  table(sub, [("model", "model", "{}"), ("processors", "P", "{}"),
                              ("pipedream_stages", "PipeDream stages", "{}"),
                              ("pipedream_cycles", "PipeDream cycles/step", "{:.4g}"),
                              ("layerpipe_cycles", "LayerPipe cycles/step", "{:.4g}"),
                              ("speedup", "speedup", "{:.2f}x"),
                              ("pipedream_bytes", "PipeDream bytes/step", "{:.3g}"),
                              ("layerpipe_bytes", "LayerPipe bytes/step", "{:.3g}")]), "",
                  f"Average speedup **{average:.2f}x** (paper 1.25x), best **{best['speedup']:.2f}x** "
                  f"({best['model']}, P={best['processors']}; paper above 1.8x). LayerPipe moves fewer bytes than "
                  f"PipeDream in {less} of {len(sub)} configurations (paper: less communication).", ""]
        if h == "systolic":
            lines += ["Clock cycles of 32x32 output-stationary systolic arrays at 1 GHz (`models/data/hardware/"
                      "systolic.json`: SCALE-Sim's default array and SRAMs, bf16, 32 GB/s DRAM, PCIe 4 links): each "
                      "processor's `systolic` accelerator module computes every task's cycles from its layers' GEMMs "
                      "(folds of the array, fill and drain, DRAM traffic, element-wise work; docs/accelerators.md), "
                      "the cycle counts SCALE-Sim gives (`experiments/systolic_vs_scalesim.py`). Why the gain is larger "
                      "than on `unit`: PipeDream's period is at least one layer's F+BA+BW, LayerPipe's at least its "
                      "largest single task, and on an array the layers' costs are far from equal: a layer's GEMMs "
                      "fold onto 32x32 cells by its shapes, so lenet5's c1 (6 filters on 32 columns, over 100k output "
                      "pixels per microbatch) outweighs the rest, and splitting its F, BA and BW over processors "
                      "more than halves the period (`pipetwin kernels -m lenet5 --hardware systolic` lists each "
                      "task's cycles). The bytes are as on the other profiles.", ""]
    lines += ["Why: on `unit` hardware PipeDream's period is its slowest stage's F+B, in whole layers (whole blocks "
              "for ResNets), while LayerPipe's modulo scheduler places single F, BA and BW tasks and reaches "
              "max(iteration bound, ceil(work / P)) (checked by the tests); the gain is the granularity. Our "
              "reconstruction pays for that granularity in bytes: every layer whose BA or BW runs on a neighbour "
              "ships across its gradient and what it reads of its forward's stash (all of it for a BW, all but the "
              "input for a BA part; until 2026-11-24 the graph sent a BW only the input and a BA part nothing, "
              "which the executors showed to be wrong), where PipeDream only crosses P-1 stage boundaries. The paper's "
              "communication accounting is not public (docs/papers.md §1.3), so the communication claim is not "
              "reproduced by this reconstruction (section 1b asks whether any schedule of ours has both). On `h100` the same granularity has a price in time too: every "
              "per-layer task (and each BA part) pays the profile's kernel-launch overhead, which a PipeDream stage "
              "pays once per stage, so on ResNets' many small layers LayerPipe's total work, and with it its "
              "processor bound, exceeds PipeDream's period (`pipetwin simulate --model resnet56 --schedule "
              "layerpipe --hardware h100 --procs 7` prints the period and both bounds).", ""]
    return "\n".join(lines)


# 1b. LayerPipe's communication: the exact scheduler's period-bytes front ------------------------
FRONT_MODELS = ["lenet5", "mlp", "alexnet"]
FRONT_PERIODS = 7  # periods per configuration, from the least one up
# Per solve: a node budget (the same schedule on every machine) and a time limit (a bound on the
# run); docs/schedules/exact.md. The MLP's programs are small enough to prove: no node limit.
FRONT_SOLVE = ("scheduler=exact", "solve_nodes=300", "solve_seconds=60")
FRONT_SOLVE_PROVEN = ("scheduler=exact", "solve_nodes=0", "solve_seconds=120")


def front_solve(model):
    return FRONT_SOLVE_PROVEN if model == "mlp" else FRONT_SOLVE


def front_proofs(rows):
    """The configurations where the fewest bytes at PipeDream's period (or a shorter one) are proven
    and still exceed PipeDream's: there, no LayerPipe schedule has both its speed and its bytes."""
    proven = []
    for m, p in dict.fromkeys((r["model"], r["processors"]) for r in rows):
        sub = [r for r in rows if r["model"] == m and r["processors"] == p]
        at = [r for r in sub if r["cycles_per_step"] <= r["pipedream_cycles"]]
        # Fewest bytes only fall as the period grows (docs/schedules/exact.md), so the longest such
        # period decides.
        last = max(at, key=lambda r: r["period_cycles"], default=None)
        if last is not None and int(last["bytes_proven_fewest"]) and last["scheduled_bytes"] > last["pipedream_bytes"]:
            proven.append(f"{m} P={p:.0f} ({last['scheduled_bytes']:.3g} bytes per step at {last['cycles_per_step']:.0f} "
                          f"cycles, in the scheduler's count, against PipeDream's {last['pipedream_bytes']:.3g})")
    if not proven:
        return "No configuration has that proven."
    return ("Proven for " + ", ".join(proven) + ": the fewest bytes any LayerPipe schedule moves at PipeDream's "
            "period exceed PipeDream's.")


def experiment_layerpipe_front(runner):
    steps = 40
    configs = [(m, p) for m in FRONT_MODELS for p in (7, 8, 9)]
    least = runner.many([(m, "layerpipe", "unit", p, 1, steps, front_solve(m)) for m, p in configs])
    greedy = runner.many([(m, "layerpipe", "unit", p, 1, steps) for m, p in configs])
    with concurrent.futures.ThreadPoolExecutor(runner.jobs) as pool:
        pipedream = list(pool.map(lambda c: pipedream_at_most(runner, c[0], "unit", c[1], steps), configs))
    points = []
    for (m, p), lp in zip(configs, least):
        if "error" in lp:
            raise RuntimeError(f"layerpipe exact {m} P={p}: {lp['error']}")
        t0 = int(lp["schedule_metrics"]["period_cycles"])
        points += [(m, p, t) for t in range(t0 + 1, t0 + FRONT_PERIODS)]
    longer = runner.many([(m, "layerpipe", "unit", p, 1, steps, front_solve(m) + (f"period={t}",)) for m, p, t in points])
    rows, summary = [], []
    for (m, p), lp, gr, pd in zip(configs, least, greedy, pipedream):
        runs = [lp] + [r for (mm, pp, _), r in zip(points, longer) if (mm, pp) == (m, p)]
        pd_bytes = pd["total_link_bytes"] / per_step(pd)
        best_bytes = float("inf")
        front = []
        for r in runs:
            if "error" in r:
                raise RuntimeError(f"layerpipe exact {m} P={p}: {r['error']}")
            metrics = r["schedule_metrics"]
            row = {"model": m, "processors": p, "period_cycles": int(metrics["period_cycles"]),
                   "cycles_per_step": r["iteration_cycles"], "bytes_per_step": r["total_link_bytes"] / per_step(r),
                   "scheduled_bytes": metrics["scheduled_bytes"], "bytes_proven_fewest": int(metrics["bytes_optimal"]),
                   "period_proven_least": int(metrics["period_optimal"]),
                   "pipedream_cycles": pd["iteration_cycles"], "pipedream_bytes": pd_bytes}
            rows.append(row)
            if row["bytes_per_step"] < best_bytes:  # on the front: fewer bytes than every shorter period
                best_bytes = row["bytes_per_step"]
                front.append(row)
        cheaper = next((r for r in front if r["bytes_per_step"] <= pd_bytes), None)
        summary.append({"model": m, "processors": p, "pipedream_cycles": pd["iteration_cycles"],
                        "pipedream_bytes": pd_bytes, "greedy_cycles": gr["iteration_cycles"],
                        "greedy_bytes": gr["total_link_bytes"] / per_step(gr),
                        "exact_cycles": lp["iteration_cycles"], "exact_bytes": lp["total_link_bytes"] / per_step(lp),
                        "period_proven": "yes" if lp["schedule_metrics"]["period_optimal"] else "no",
                        "front": ", ".join(f"{r['cycles_per_step']:.0f}: {r['bytes_per_step']:.3g}"
                                           + ("*" if r["bytes_proven_fewest"] else "") for r in front),
                        "cheaper_cycles": cheaper["cycles_per_step"] if cheaper else "",
                        "cheaper_bytes": cheaper["bytes_per_step"] if cheaper else ""})
    write_csv("layerpipe_front", rows)

    def draw(ax):
        for m, p in configs:
            sub = [r for r in rows if r["model"] == m and r["processors"] == p]
            line, = ax.plot([r["cycles_per_step"] for r in sub], [r["bytes_per_step"] for r in sub], "o-",
                            label=f"LayerPipe {m} P={p}", ms=3)
            ax.plot([sub[0]["pipedream_cycles"]], [sub[0]["pipedream_bytes"]], "x", c=line.get_color(), ms=8)
        ax.set_xlabel("cycles per step (unit hardware)")
        ax.set_ylabel("link bytes per step")
        ax.set_yscale("log")
        ax.set_title("LayerPipe, exact scheduler: fewest bytes at each period (x: PipeDream)")
        ax.legend(fontsize=6, ncol=3)
    plot("layerpipe_front", draw)

    matched = [s for s in summary if s["cheaper_cycles"] != ""]
    proven = sum(1 for r in rows if r["model"] == "mlp" and r["bytes_proven_fewest"])
    faster = [s for s in matched if s["cheaper_cycles"] < s["pipedream_cycles"]]
    as_fast = [f"{s['model']} P={s['processors']}" for s in matched if s["cheaper_cycles"] == s["pipedream_cycles"]]
    return "\n".join([
        "## 1b. LayerPipe's communication: the period-bytes front",
        "",
        "Paper: LayerPipe is faster than PipeDream **with less communication**. Command: `python3 "
        "experiments/paper_experiments.py layerpipe-front`. The exact scheduler (`--param scheduler=exact`, "
        "docs/schedules/exact.md: an integer program solved by CBC, started from a local search) places LayerPipe's "
        "tasks at the least period, then at each longer period (`period=T`) with the fewest bytes it finds "
        f"(lenet5 and alexnet: {FRONT_SOLVE[1]} per solve, the node limit binding before {FRONT_SOLVE[2]} per graph, "
        f"so the schedules are the same on every machine; mlp: no node limit, {FRONT_SOLVE_PROVEN[2]}). Every point "
        f"is then simulated on `unit` hardware ({steps} steps, one microbatch per step); bytes are all link traffic "
        "per step, as in section 1. `front` lists the Pareto points, cycles per step: bytes per step (each point "
        "moves fewer bytes than every faster one); `*` marks bytes proven fewest at that period.",
        "",
        table(summary, [("model", "model", "{}"), ("processors", "P", "{}"),
                        ("pipedream_cycles", "PipeDream cycles", "{:.0f}"), ("pipedream_bytes", "PipeDream bytes", "{:.3g}"),
                        ("greedy_cycles", "greedy cycles", "{:.0f}"), ("greedy_bytes", "greedy bytes", "{:.3g}"),
                        ("exact_cycles", "exact cycles", "{:.0f}"), ("exact_bytes", "exact bytes", "{:.3g}"),
                        ("period_proven", "least period proven", "{}"),
                        ("front", "front (cycles: bytes)", "{}"),
                        ("cheaper_cycles", "fastest at <= PipeDream's bytes", "{:.0f}")]),
        "",
        f"LayerPipe reaches PipeDream's bytes or fewer in {len(matched)} of {len(summary)} configurations within "
        f"{FRONT_PERIODS} periods of its least; at those points it is faster than PipeDream in {len(faster)}, and "
        f"as fast in {len(as_fast)} ({', '.join(as_fast) if as_fast else 'none'}). "
        "The least periods are proven (every shorter period infeasible, shown by CBC); the bytes are the fewest "
        "found, proven fewest only where marked: for lenet5 and alexnet CBC's lower bound on bytes stays near 0 (the "
        "relaxation of processor assignment is weak), so their gap to the true front is unknown; the mlp's "
        f"{proven} of {len([r for r in rows if r['model'] == 'mlp'])} points are proven. In the schedules found, LayerPipe has "
        "either the paper's speed or its communication, not both: its speed comes from splitting layers across "
        "processors, which is what moves the bytes, and it matches PipeDream's bytes at PipeDream's period at "
        "best. " + front_proofs(rows) + " That is a finding about this reconstruction (docs/schedules/layerpipe.md), whose communication "
        "accounting the paper does not publish, not a proof about the paper's schedules.",
        ""])


# 2. Stale weights -----------------------------------------------------------------------------
def experiment_stale_weights(runner):
    steps = 24
    nets = [("resnet56", 19), ("resnet110", 37), ("resnet224", 75), ("resnet362", 121)]
    configs = []
    for m, ppv in nets:
        configs += [(m, "sequential", "v100", 1, 1, steps), (m, "stale-weights", "v100", 2, 1, steps, [f"ppv={ppv}"]),
                    (m, "stale-weights", "v100", 2, 1, steps)]
    results = runner.many(configs)
    speed = []
    for i, (m, ppv) in enumerate(nets):
        base, paper, balanced = results[3 * i:3 * i + 3]
        speed.append({"model": m, "ppv": ppv, "one_gpu_cycles": base["iteration_cycles"],
                      "ppv_cycles": paper["iteration_cycles"], "speedup_ppv": base["iteration_cycles"] / paper["iteration_cycles"],
                      "speedup_balanced": base["iteration_cycles"] / balanced["iteration_cycles"]})
    write_csv("stale_weights_speedup", speed)

    mem_nets = [("lenet5", 2), ("alexnet", 3), ("vgg16", 2), ("resnet20", 7)]
    configs = []
    for m, ppv in mem_nets:
        configs += [(m, "sequential", "v100", 1, 1, 8), (m, "stale-weights", "v100", 2, 1, 8, [f"ppv={ppv}"]),
                    (m, "stale-weights", "v100", 2, 1, 8, [f"ppv={ppv}", "stash=true"]),
                    (m, "pipedream", "v100", 4, 1, 8)]
    results = runner.many(configs)
    memory = []
    for i, (m, ppv) in enumerate(mem_nets):
        base, stale, stashed, pd = results[4 * i:4 * i + 4]
        total = lambda r: sum(r["peak_memory_bytes"])
        weights = 4 * runner.parameters(m)  # fp32 bytes of every weight
        memory.append({"model": m, "ppv": ppv, "nonpipelined_bytes": total(base), "stale_bytes": total(stale),
                       "stashed_bytes": total(stashed), "pipedream_bytes": total(pd),
                       "stale_increase": total(stale) / total(base) - 1,
                       "stashed_increase": total(stashed) / total(base) - 1,
                       "stashed_minus_stale_weights": (total(stashed) - total(stale)) / weights,
                       "paper_accounting_increase": (total(stale) + 4 * weights) / total(base) - 1,
                       "pipedream_increase": total(pd) / total(base) - 1})
    write_csv("stale_weights_memory", memory)

    # The PPV a time-balanced cut gives: the stale-weights pipeline without `ppv` puts its register
    # where the balanced partition for 2 processors does, from each profile's task times.
    ppv_hardware = ("unit", "cpu-core", "systolic", "v100", "a100", "h100")
    balanced_ppv = []
    for m, ppv in nets:
        row = {"model": m, "paper_ppv": ppv}
        for h in ppv_hardware:
            graph = runner.schedule(m, "stale-weights", h, 2, 1, 2)
            row[h] = graph["stages"][0]["layers"][1] + 1  # the register follows this layer, counted from 1
        balanced_ppv.append(row)
    write_csv("stale_weights_balanced_ppv", balanced_ppv)

    def draw(ax):
        xs = range(len(speed))
        ax.bar([x - 0.2 for x in xs], [r["speedup_ppv"] for r in speed], 0.4, label="paper's PPV")
        ax.bar([x + 0.2 for x in xs], [r["speedup_balanced"] for r in speed], 0.4, label="balanced cut")
        ax.axhline(1.8, ls="--", c="gray", label="paper: up to 1.8x")
        ax.set_xticks(list(xs), [r["model"] for r in speed])
        ax.set_ylabel("speedup over 1 GPU (v100)")
        ax.legend()
    plot("stale_weights_speedup", draw)
    best = max(r["speedup_ppv"] for r in speed)
    return "\n".join([
        "## 2. Pipelined training with stale weights (Zhang & Abdelrahman), 2 GPUs",
        "",
        "Paper: speedup **up to 1.8x** over one GPU on 2 GPUs for ResNet-56/110/224/362 with PPV 19/37/75/121; "
        "a table of the memory increase of 4-stage pipelined training over nonpipelined, against PipeDream's, "
        "for LeNet-5, AlexNet, VGG-16 and ResNet-20 at minibatch 128 (PPV 2/3/2/7).",
        "",
        f"Command: `python3 experiments/paper_experiments.py stale-weights`. `v100` profile, batch 128, one "
        f"update per batch, {steps} steps; speedup = one GPU's steady-state step time over the pipeline's.", "",
        table(speed, [("model", "model", "{}"), ("ppv", "PPV", "{}"), ("one_gpu_cycles", "1 GPU cycles/step", "{:.4g}"),
                      ("ppv_cycles", "2 GPUs cycles/step", "{:.4g}"), ("speedup_ppv", "speedup (paper's PPV)", "{:.2f}x"),
                      ("speedup_balanced", "speedup (balanced cut)", "{:.2f}x")]), "",
        f"Best predicted speedup with the paper's PPVs: **{best:.2f}x** (paper: up to 1.8x). The PPVs put the "
        "register a third of the way in (layer 19 of 56), after the first stage of residual blocks: a third of "
        "the FLOPs, but the first stage's activations are twice the second's and four times the third's, so "
        "where memory-bound kernels, thin convolutions and the host weigh as much as the FLOPs the partitions "
        + ("come out about even (the paper's PPV is within 3% of the balanced cut)."
           if all(r["speedup_ppv"] > 0.97 * r["speedup_balanced"] for r in speed)
           else "are uneven and the pipeline runs at the heavier one's pace; the balanced cut shows what 2 GPUs can "
                "reach in this model.")
        + " The paper's GPU model and its measured per-layer times are not public, so the balance cannot be "
        "checked against its.", "",
        "The PPV a time-balanced cut gives on each profile (`stale-weights` on 2 processors without `ppv`: the "
        "register where the balanced partition of F+B task times puts it; cuts only between residual blocks):", "",
        table(balanced_ppv, [("model", "model", "{}"), ("paper_ppv", "paper's PPV", "{}")] +
              [(h, h, "{}") for h in ppv_hardware]), "",
        "Where FLOPs decide (`unit`, `cpu-core`), the balanced register is halfway; on GPUs, where a thin early "
        "layer costs more than its FLOPs (memory-bound kernels, launch and framework overheads), it moves "
        "earlier. The paper's PPVs are a V100's balanced cut within one residual block (19 and 37 exactly), which "
        "fits a paper that ran on GPUs of that generation; on newer GPUs the balance moves again.", "",
        "Memory, summed over devices (device peaks), against nonpipelined training on one device: the 4-stage "
        "pipeline (stale-weights, 2 GPUs); **the same pipeline with PipeDream's weight stashing** "
        "(`stash=true`: each backward reads the version its forward read, so partition 1 keeps up to 4 versions "
        "of its weights and partition 2 up to 2); the increase the paper's accounting implies, this work plus 4 "
        "copies of every weight (the issue's reading of the paper's table: PipeDream minus this work is about 4x "
        "the weight memory in every row); and our PipeDream on 4 stages (4 GPUs):", "",
        table(memory, [("model", "model", "{}"), ("ppv", "PPV", "{}"), ("nonpipelined_bytes", "nonpipelined bytes", "{:.3g}"),
                       ("stale_increase", "stale-weights", "{:+.0%}"),
                       ("stashed_increase", "same pipeline, stashed", "{:+.0%}"),
                       ("stashed_minus_stale_weights", "stashed - stale, in weight copies", "{:.2f}"),
                       ("paper_accounting_increase", "stale + 4 weight copies", "{:+.0%}"),
                       ("pipedream_increase", "PipeDream, 4 stages", "{:+.0%}")]),
        "",
        "Stale weights keep no stashed versions, so their increase comes from activations in flight only. On "
        "the same pipeline, stashing costs "
        + f"{min(r['stashed_minus_stale_weights'] for r in memory):.2f} to "
        + f"{max(r['stashed_minus_stale_weights'] for r in memory):.2f}"
        + " copies of the weights in our accounting, not 4: the extra versions are of one partition's weights "
        "each (3 of the first's, 1 of the second's), and a device's peak counts them only where they coincide "
        "with its activation peak. The paper's 4 copies are what every partition keeping 4 versions would cost, "
        "an upper bound; with it the paper's ordering (stale weights use less memory than PipeDream) holds in "
        "every row; on the same pipeline in ours, stale weights need "
        + f"{min(100 * (r['stashed_increase'] - r['stale_increase']) for r in memory):.0f} to "
        + f"{max(100 * (r['stashed_increase'] - r['stale_increase']) for r in memory):.0f}"
        + " percentage points less than stashing. The paper's own percentages are not in the available sources "
        "(docs/papers.md §3.5).", ""])


# 3. PipeFB vs PipeDream with offload -------------------------------------------------------------
PIPEFB_HARDWARE = ("unit", "h100", "v100", "cpu-core")


def experiment_pipefb(runner):
    steps = 32
    cases = [(h, m, p) for h in PIPEFB_HARDWARE for m in ("alexnet", "vgg16", "resnet56", "resnet110") for p in (4, 8)]
    # Per case: PipeDream with offload, PipeFB with one F-node per stage (paired, fnodes = P/2), and
    # PipeFB with fewer F-nodes than B-nodes (fnodes = 1 .. P/2 - 1; docs/schedules/pipefb.md).
    configs = []
    for h, m, p in cases:
        configs.append((m, "pipedream", h, p, 1, steps, ["offload=true"]))
        configs += [(m, "pipefb", h, p, 1, steps, [f"fnodes={f}"]) for f in range(1, p // 2 + 1)]
    results = iter(runner.many(configs))
    rows = []
    for h, m, p in cases:
        pd = next(results)
        fb = {f: next(results) for f in range(1, p // 2 + 1)}
        for name, r in [("pipedream", pd)] + [(f"pipefb fnodes={f}", r) for f, r in fb.items()]:
            if "error" in r:
                raise RuntimeError(f"{name} {h} {m} P={p}: {r['error']}")
        paired = fb[p // 2]
        best_f = min(fb, key=lambda f: (fb[f]["iteration_cycles"], f))
        best = fb[best_f]
        pd_peak = max(pd["peak_memory_bytes"])
        rows.append({"hardware": h, "model": m, "processors": p,
                     "pipedream_offload_cycles": pd["iteration_cycles"], "pipedream_offload_peak_bytes": pd_peak,
                     "pipefb_cycles": paired["iteration_cycles"], "pipefb_peak_bytes": max(paired["peak_memory_bytes"]),
                     "speedup": pd["iteration_cycles"] / paired["iteration_cycles"],
                     "memory_ratio": max(paired["peak_memory_bytes"]) / pd_peak,
                     "best_fnodes": best_f, "best_cycles": best["iteration_cycles"],
                     "best_speedup": pd["iteration_cycles"] / best["iteration_cycles"],
                     "best_memory_ratio": max(best["peak_memory_bytes"]) / pd_peak,
                     "best_mean_utilization": best["mean_utilization"]})
    write_csv("pipefb_vs_pipedream_offload", rows)

    def draw(ax):
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["speedup"] for r in rows], width=0.4, label="PipeFB, one F-node per stage")
        ax.bar([x + 0.2 for x in xs], [r["best_speedup"] for r in rows], width=0.4, label="PipeFB, best fnodes")
        ax.axhspan(1.48, 2.27, color="gray", alpha=0.2, label="paper: 1.48x to 2.27x")
        ax.set_xticks(list(xs), [f"{r['hardware']}\n{r['model']}\nP={r['processors']}" for r in rows], fontsize=5)
        ax.set_ylabel("PipeFB throughput / PipeDream+offload")
        ax.legend(fontsize=7)
    plot("pipefb_vs_pipedream_offload", draw)
    lines = [
        "## 3. PipeFB vs PipeDream with activation offload",
        "",
        "Paper (PipeFB, abstract): **same peak memory** as PipeDream with the data transfer mechanism, "
        "**1.48x to 2.27x faster**.", "",
        f"Command: `python3 experiments/paper_experiments.py pipefb`. One microbatch per step, {steps} steps, P "
        "processors for both. Two reconstructions of PipeFB's node roles (docs/schedules/pipefb.md): **paired**, one "
        "F-node and one B-node per stage (P/2 stages; `fnodes` = P/2, the default), and **roles**, fewer F-nodes than "
        "B-nodes (P - fnodes stages, each F-node running the forwards of consecutive stages), of which the fastest "
        "fnodes from 1 to P/2 is shown. Speedup and memory are against PipeDream with offload on the same P; memory "
        "is the largest device peak.", ""]
    for h in PIPEFB_HARDWARE:
        sub = [r for r in rows if r["hardware"] == h]
        lines += [f"### `{h}`", "",
                  table(sub, [("model", "model", "{}"), ("processors", "P", "{}"),
                              ("pipedream_offload_cycles", "PipeDream+offload cycles/step", "{:.4g}"),
                              ("pipefb_cycles", "paired cycles/step", "{:.4g}"), ("speedup", "paired speedup", "{:.2f}x"),
                              ("memory_ratio", "paired memory", "{:.2f}x"), ("best_fnodes", "best fnodes", "{}"),
                              ("best_speedup", "best speedup", "{:.2f}x"), ("best_memory_ratio", "its memory", "{:.2f}x"),
                              ("best_mean_utilization", "its mean utilization", "{:.2f}")]), ""]
    in_range = [r for r in rows if r["best_speedup"] >= 1.48]
    both = [r for r in in_range if r["best_memory_ratio"] <= 1.05]
    best = max(rows, key=lambda r: r["best_speedup"])
    low = min(r["speedup"] for r in rows)
    high = max(r["speedup"] for r in rows)
    lines += [
        f"Paired PipeFB: {low:.2f}x to {high:.2f}x (paper 1.48x to 2.27x). Best over both reconstructions: "
        f"**{best['best_speedup']:.2f}x** ({best['hardware']}, {best['model']}, P={best['processors']}, fnodes="
        f"{best['best_fnodes']}, at {best['best_memory_ratio']:.2f}x PipeDream's peak memory). The paper's speed range "
        f"is reached in {len(in_range)} of {len(rows)} cases, and together with its memory claim (within 5%) in "
        f"{len(both)}.", "",
        "Why: with free transfers a PipeFB pipeline can at best tie PipeDream, since both split the same work over "
        "the same P processors; paired PipeFB even loses a quarter (a B-node carries two thirds of its stage, so its "
        "period is 4/3 of PipeDream's W/P), which fewer F-nodes win back where the stages balance (`unit`: 0.75x "
        "paired, up to 1.00x for resnet56 at P=8 with 3 F-nodes; alexnet and vgg16 have too few cut points). PipeFB gains only where PipeDream's own offload and reload stall its "
        "processors: on `cpu-core` and `v100` (slower compute against the host link) the best cases reach 1.5x. On "
        "`h100` the host link is slow against compute for both, and PipeFB's stashes all cross it twice (F-node to "
        "host, host to B-node), so its processors wait on data (mean utilization above). On memory, PipeFB's B-node "
        "keeps the weight versions of every update in flight round the F -> B -> F loop, and an F-node running ahead "
        "keeps stashes until their offload ends, so its peak exceeds PipeDream's in most cases. The paper's hardware, "
        "node roles and overlap are not public (docs/papers.md §4).", ""]
    return "\n".join(lines)


# 4. Layer-wise partitioning and merging ---------------------------------------------------------
def experiment_layerwise_merge(runner):
    steps = 32
    models = ["resnet56", "vgg16", "gpt"]
    procs = list(range(1, 9))
    rows = []
    for m in models:
        for r in runner.sweep(m, ["layerwise-merge"], "h100", procs, 1, steps):
            if r["error"]:
                rows.append({"model": m, "processors": r["processors"], "cycles": "", "speedup": "", "efficiency": "",
                             "bytes": ""})
                continue
            rows.append({"model": m, "processors": r["processors"], "cycles": r["iteration_cycles"],
                         "speedup": r["speedup"], "efficiency": r["speedup"] / r["processors"],
                         "bytes": r["link_bytes"] / (r["minibatches"] * r["microbatches"])})
    write_csv("layerwise_merge_speedup", rows)

    def draw(ax):
        for m in models:
            sub = [r for r in rows if r["model"] == m and r["speedup"] != ""]
            ax.plot([r["processors"] for r in sub], [r["speedup"] for r in sub], "o-", label=m)
        ax.plot(procs, procs, "--", c="gray", label="linear")
        ax.set_xlabel("processors")
        ax.set_ylabel("speedup over 1 processor")
        ax.legend()
    plot("layerwise_merge_speedup", draw)
    eff8 = {r["model"]: r["efficiency"] for r in rows if r["processors"] == 8 and r["efficiency"] != ""}
    return "\n".join([
        "## 4. Layer-wise partitioning and merging (Akintoye et al.)",
        "",
        "Paper: **almost linear speedup** without losing accuracy.", "",
        f"Command: `python3 experiments/paper_experiments.py layerwise-merge`. `h100`, one microbatch per step, "
        f"{steps} steps; speedup over sequential training on one processor.", "",
        table(rows, [("model", "model", "{}"), ("processors", "P", "{}"), ("cycles", "cycles/step", "{:.4g}"),
                     ("speedup", "speedup", "{:.2f}x"), ("efficiency", "speedup / P", "{:.2f}"),
                     ("bytes", "bytes/step", "{:.3g}")]), "",
        "Parallel efficiency at P = 8: " + ", ".join(f"{m} {e:.2f}" for m, e in eff8.items()) + ". Near 1 is the "
        "paper's \"almost linear\". Where it falls short, the slowest stage is a layer or block that cannot be split "
        "further: for gpt at P = 8 the LM head alone (vocabulary GEMM) is the last stage, busy 92% while the others "
        "idle (`pipetwin simulate --model gpt --schedule layerwise-merge --procs 8 --per-processor`).", ""])


# 5. Zero bubble ---------------------------------------------------------------------------------
def experiment_zero_bubble(runner):
    rows, configs = [], []
    for p in (2, 4, 8):
        for m in (2 * p, 4 * p):
            widths = ",".join(["64"] * (2 * p + 1))  # 2P equal layers: F = BA = BW per stage on unit
            for s in ("1f1b", "zb-h1", "zb-h2"):
                configs.append((p, m, s, ("mlp", s, "unit", p, m, 4, [f"widths={widths}", f"batch={m}"])))
    results = runner.many([c[3] for c in configs])
    for (p, m, s, _), r in zip(configs, results):
        closed = {"1f1b": (p - 1) / (m + p - 1), "zb-h1": (p - 1) / (3 * m + p - 1), "zb-h2": 0.0}[s]
        busy = 3 * m * 2  # per steady-state step a processor runs M x (F + BA + BW) of its 2 layers
        rows.append({"schedule": s, "processors": p, "microbatches": m, "bubble": 1 - busy / r["iteration_cycles"],
                     "closed_form": closed})
    write_csv("zero_bubble", rows)

    def draw(ax):
        for s, marker in (("1f1b", "o"), ("zb-h1", "s"), ("zb-h2", "^")):
            sub = [r for r in rows if r["schedule"] == s]
            ax.plot(range(len(sub)), [r["bubble"] for r in sub], marker, label=f"{s} simulated")
            ax.plot(range(len(sub)), [r["closed_form"] for r in sub], "x", c="k")
        ax.set_xticks(range(len(sub)), [f"P={r['processors']}\nM={r['microbatches']}" for r in sub], fontsize=7)
        ax.set_ylabel("bubble fraction (x: closed form)")
        ax.legend()
    plot("zero_bubble", draw)
    worst = max(abs(r["bubble"] - r["closed_form"]) for r in rows)
    return "\n".join([
        "## 5. Zero bubble: 1f1b, zb-h1, zb-h2",
        "",
        "Closed forms with F = BA = BW (Qi et al. 2024): 1f1b (P-1)/(M+P-1); zb-h1 about a third of that, "
        "(P-1)/(3M+P-1); zb-h2 about zero (M >= 2P).", "",
        "Command: `python3 experiments/paper_experiments.py zero-bubble`. Uniform MLP (2P equal layers) on `unit` "
        "hardware, 4 minibatches; bubble = idle share of a processor's steady-state step (one minibatch: the "
        "steps repeat after the first).", "",
        table(rows, [("schedule", "schedule", "{}"), ("processors", "P", "{}"), ("microbatches", "M", "{}"),
                     ("bubble", "simulated bubble", "{:.4f}"), ("closed_form", "closed form", "{:.4f}")]), "",
        f"Largest difference from the closed form: {worst:.2g}.", ""])


# 0. The claims at a glance (from the other experiments' CSVs) ----------------------------------
def read_csv(name):
    with open(os.path.join(RESULTS, name + ".csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            try:
                r[k] = float(v)
            except (TypeError, ValueError):
                pass
    return rows


def experiment_claims(runner):
    """Needs the CSVs of the other experiments (run them first, or `all`)."""
    del runner
    lp = read_csv("layerpipe_vs_pipedream")
    front = read_csv("layerpipe_front")
    stale_speed = read_csv("stale_weights_speedup")
    stale_memory = read_csv("stale_weights_memory")
    pipefb = read_csv("pipefb_vs_pipedream_offload")
    merge = read_csv("layerwise_merge_speedup")
    rows = []
    for h in ("unit", "systolic", "h100"):
        sub = [r for r in lp if r["hardware"] == h]
        average = sum(r["speedup"] for r in sub) / len(sub)
        best = max(sub, key=lambda r: r["speedup"])
        rows.append({"claim": f"LayerPipe over PipeDream, P = 7-9 (`{h}`)", "paper": "1.25x average, above 1.8x best",
                     "found": f"{average:.2f}x average, {best['speedup']:.2f}x best ({best['model']}, P={best['processors']:.0f})",
                     "gap": f"{average - 1.25:+.2f}x average, {best['speedup'] - 1.8:+.2f}x best",
                     "why": ("every LayerPipe period here equals its lower bound, max(iteration bound, work / P) (a test), "
                             "so no faster LayerPipe schedule exists in this task model; the gain is granularity "
                             "over PipeDream's whole-layer stages, and the bound caps it"
                             if h == "unit" else
                             "an array's layer costs are far from equal, so splitting F, BA and BW pays more"
                             if h == "systolic" else
                             "per-task launch and framework overheads, paid per layer by LayerPipe, once per stage "
                             "by PipeDream")})
    configs = {(r["model"], r["processors"]) for r in front}
    both, as_fast = 0, 0
    for m, p in configs:
        sub = [r for r in front if r["model"] == m and r["processors"] == p]
        pd_cycles, pd_bytes = sub[0]["pipedream_cycles"], sub[0]["pipedream_bytes"]
        both += any(r["cycles_per_step"] < pd_cycles and r["bytes_per_step"] <= pd_bytes for r in sub)
        as_fast += any(r["cycles_per_step"] <= pd_cycles and r["bytes_per_step"] <= pd_bytes for r in sub)
    rows.append({"claim": "LayerPipe: less communication than PipeDream, while faster", "paper": "less",
                 "found": f"faster and fewer bytes in {both} of {len(configs)}; as fast and fewer bytes in {as_fast}",
                 "gap": "speed or bytes, not both",
                 "why": "its speed comes from splitting layers over processors, which moves their data (front in 1b; "
                        "proven for the mlp at P = 7-9, the fewest found for lenet5 and alexnet)"})
    best_stale = max(stale_speed, key=lambda r: r["speedup_ppv"])
    rows.append({"claim": "Stale weights: speedup on 2 GPUs", "paper": "up to 1.8x (1.65-1.82x, rising with depth)",
                 "found": f"{min(r['speedup_ppv'] for r in stale_speed):.2f}-{best_stale['speedup_ppv']:.2f}x (v100)",
                 "gap": f"{best_stale['speedup_ppv'] - 1.8:+.2f}x",
                 "why": "the PPV balances the two GPUs (it is a v100's balanced cut) and the activations crossing "
                        "between them are small against compute, so we predict a flat near-2x; the paper's speedup "
                        "rising with depth points to a fixed cost per step that deeper networks amortise, which we "
                        "do not model (a hypothesis: its measured overheads are not public)"})
    gaps = [100 * (r["stashed_increase"] - r["stale_increase"]) for r in stale_memory]
    rows.append({"claim": "Stale weights: less memory than PipeDream", "paper": "less, by about 4 weight copies",
                 "found": f"less than the same pipeline with stashing by {min(gaps):.0f}-{max(gaps):.0f} points",
                 "gap": "the ordering holds; the margin is smaller",
                 "why": "stashing adds versions of one partition's weights each, counted where they meet a device's "
                        "peak; the paper's 4 copies of every weight are an upper bound"})
    best_fb = max(pipefb, key=lambda r: r["best_speedup"])
    in_range = sum(1 for r in pipefb if r["best_speedup"] >= 1.48)
    rows.append({"claim": "PipeFB over PipeDream with offload", "paper": "1.48-2.27x, same peak memory",
                 "found": f"best {best_fb['best_speedup']:.2f}x ({best_fb['hardware']}, {best_fb['model']}, "
                          f"P={best_fb['processors']:.0f}) at {best_fb['best_memory_ratio']:.2f}x memory; "
                          f"in the speed range in {in_range} of {len(pipefb)}",
                 "gap": f"{best_fb['best_speedup'] - 2.27:+.2f}x to the top of the range; memory above",
                 "why": "with free transfers it can only tie PipeDream; it wins only where PipeDream's offload stalls; "
                        "its weight versions round the F-B loop cost memory (section 3)"})
    at8 = [r for r in merge if r["processors"] == 8]
    eff = {r["model"]: r["speedup"] / 8 for r in at8}
    rows.append({"claim": "Layer-wise merging: almost linear speedup", "paper": "almost linear",
                 "found": ", ".join(f"{m} {e:.2f}" for m, e in eff.items()) + " (efficiency at P = 8)",
                 "gap": f"{min(eff.values()) - 1:+.2f} at worst",
                 "why": "the slowest stage is a layer that cannot be split (gpt's LM head)"})
    return "\n".join([
        "## 0. The claims at a glance",
        "",
        "Each seed claim, the best schedule we found for it (with the exact scheduler where it applies), the gap "
        "and the reason; the sections below have the tables. `python3 experiments/paper_experiments.py claims` "
        "rebuilds this from the other experiments' CSVs.", "",
        table(rows, [("claim", "claim", "{}"), ("paper", "paper", "{}"), ("found", "best found", "{}"),
                     ("gap", "gap", "{}"), ("why", "why", "{}")]),
        "",
        "Accuracy under staleness (the stale-weights paper's trend: pipelining early layers costs little, deep "
        "layers more) is in section 6, from real training.", ""])


EXPERIMENTS = {"layerpipe": experiment_layerpipe, "layerpipe-front": experiment_layerpipe_front,
               "stale-weights": experiment_stale_weights,
               "pipefb": experiment_pipefb, "layerwise-merge": experiment_layerwise_merge,
               "zero-bubble": experiment_zero_bubble, "claims": experiment_claims}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", choices=list(EXPERIMENTS) + ["all"])
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if not os.access(args.pipetwin, os.X_OK):
        sys.exit(f"error: {args.pipetwin} not found; build first (scripts/build.sh)")
    os.makedirs(RESULTS, exist_ok=True)
    runner = Runner(args.pipetwin, args.jobs)
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    sections = []
    for name in names:
        print(f"== {name}", flush=True)
        section = EXPERIMENTS[name](runner)
        with open(os.path.join(RESULTS, name + ".md"), "w") as f:
            f.write(section)
        sections.append(section)
    if args.experiment == "all":
        with open(os.path.join(ROOT, "docs", "results.md"), "w") as f:
            f.write("# The seed papers' experiments in simulation\n\n"
                    "Generated by `python3 experiments/paper_experiments.py all` from SystemC simulations; do not "
                    "edit by hand. CSVs and figures are in `experiments/results/`. The papers' claims are quoted from "
                    "`docs/papers.md` (only abstracts and a few tables were available; the methods "
                    "of LayerPipe, PipeFB and Akintoye et al. are reconstructions, documented in `docs/schedules/`). "
                    "The GPU profiles (`v100`, `h100`) use the operator-level cost model (`docs/cost-model.md`); "
                    "`docs/gpu-validation.md` says what moved when it replaced the roofline.\n\n")
            f.write("\n".join(sections[-1:] + sections[:-1]))  # the claims at a glance first
            # The staleness-accuracy section (experiments/staleness_accuracy.py: real training) is kept.
            accuracy = os.path.join(RESULTS, "staleness-accuracy.md")
            if os.path.exists(accuracy):
                f.write("\n" + open(accuracy, encoding="utf-8").read())
        print("wrote docs/results.md")


if __name__ == "__main__":
    main()
