#!/usr/bin/env python3
"""How far apart, in bytes, each processor writes a forward's stash and reads it back: per
schedule, processor count and microbatch count, each processor's stash reuse distance (the bytes
its tasks pass through between the forward that stashes a layer's microbatch and each backward
task, B, BA or BW, that reads it on the same processor, weighted by the stash's bytes; the
minibatches after the first). A forward passes its layers' inputs, outputs and stashes (fp32); a
backward their stashes, input gradients and output gradients. Stashes read on another processor
than the one that wrote them (LayerPipe's parts) are counted apart. docs/executor.md, "Where gpipe's time at P = 2 goes", has what it says on resnet8: a
processor whose distance stays under about 20 MiB ran its layers faster than one over about 35
MiB on the 2-vCPU machine of 2026-11-30. The cost model's own computation, which validate's stash
term uses (docs/executor.md, Calibration 10), is schedule/stash_reuse.hpp; this is a second one,
in Python, and the two give the same figures (resnet8 at P = 2: 1f1b 58.1 and 11.9 MiB).

    python3 experiments/stash_reuse_distance.py [--model resnet8] [--schedules 1f1b,gpipe]
        [--procs 1,2] [--microbatches 4,8]

Needs the pipetwin Python package (pip install .)."""
import argparse
import json
import math
import sys

import pipetwin


def layer_bytes_per_sample(model):
    """Per layer: (input, output, stash) bytes per sample."""
    out = []
    for layer in pipetwin.network_layers(model):
        features = math.prod(layer["input_shape"])
        out.append((4 * features, layer["output_bytes"], layer["stash_bytes"]))
    return out


def distances(graph, sizes):
    """Per processor: (weighted mean stash reuse distance, stash bytes read here that another
    processor wrote), in bytes, over the minibatches after the first."""
    samples = graph["samples_per_microbatch"]
    tasks = [t for t in graph["tasks"] if t["placement"] == "processor" and t["kind"] in ("F", "RC", "B", "BA", "BW")]
    written_on = {}  # (layer, minibatch, microbatch) -> processor that stashed it
    for t in tasks:
        if t["kind"] == "F":
            for layer in range(t["layers"][0], t["layers"][1] + 1):
                written_on[(layer, t["minibatch"], t["microbatch"])] = t["resource"]
    result = {}
    for processor in sorted({t["resource"] for t in tasks}):
        passed, last_touch = 0, {}
        weighted, weights, remote = 0, 0, 0
        mine = sorted((t for t in tasks if t["resource"] == processor), key=lambda t: t["order"])
        for t in mine:
            n = max(1, samples // max(1, t.get("parts", 1)))
            first, last = t["layers"]
            forward = t["kind"] in ("F", "RC")
            for layer in range(first, last + 1) if forward else range(last, first - 1, -1):
                input_bytes, output_bytes, stash_bytes = (b * n for b in sizes[layer])
                key = (layer, t["minibatch"], t["microbatch"])
                if forward:
                    passed += input_bytes + output_bytes + stash_bytes
                    last_touch[key] = passed
                    continue
                if t["minibatch"] >= 1:
                    if key in last_touch:
                        weighted += (passed - last_touch[key]) * stash_bytes
                        weights += stash_bytes
                    elif written_on.get(key, processor) != processor:
                        remote += stash_bytes
                passed += stash_bytes + input_bytes + output_bytes
                last_touch[key] = passed
        result[processor] = (weighted / weights if weights else float("nan"), remote)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet8", help="network (default resnet8)")
    parser.add_argument("--schedules", default="sequential,gpipe,1f1b,pipedream,zb-h1",
                        help="comma-separated schedules (default sequential,gpipe,1f1b,pipedream,zb-h1)")
    parser.add_argument("--procs", default="1,2", help="comma-separated processor counts (default 1,2)")
    parser.add_argument("--microbatches", default="4", help="comma-separated microbatch counts (default 4)")
    parser.add_argument("--hardware", default="cpu-core", help="hardware profile the graphs are laid out for")
    parser.add_argument("--calibration", default="", help="a calibration table to lay the graphs out by (optional)")
    args = parser.parse_args()
    try:
        sizes = layer_bytes_per_sample(args.model)
        mib = 1 << 20
        print(f"{args.model}: per processor, stash reuse distance (MiB)")
        for m in (int(x) for x in args.microbatches.split(",")):
            for p in (int(x) for x in args.procs.split(",")):
                for schedule in args.schedules.split(","):
                    graph = json.loads(pipetwin.build_graph(args.model, schedule, args.hardware, processors=p,
                                                            microbatches=m, minibatches=3,
                                                            calibration=args.calibration).to_json())
                    cells = []
                    for processor, (distance, remote) in distances(graph, sizes).items():
                        cell = f"p{processor} {distance / mib:6.1f}"
                        if remote:
                            cell += f" (+{remote / mib:.1f} read from another)"
                        cells.append(cell)
                    print(f"  {schedule:12s} P={p} M={m}:  " + "   ".join(cells))
    except (pipetwin.PipetwinError, ValueError) as e:
        print(f"stash_reuse_distance.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
