#!/usr/bin/env python3
"""Systolic-array cycles per layer task: pipetwin's systolic model against SCALE-Sim's.

For every conv and dense layer of lenet5, vgg16 and resnet20, under the os, ws and is
dataflows, this compares the compute cycles `pipetwin kernels --hardware systolic --json` gives
with those of SCALE-Sim v2 (PyPI `scalesim`, an independent implementation): SCALE-Sim builds its
own operand matrices from the layer's convolution parameters (its topology: input height and
width with the padding added (the rows the convolution reads), filter height and width,
channels, filters, stride), maps them on
the array and generates its demand matrices; their length is its compute cycle count without
memory stalls. Dense layers are 1x1 convolutions on a 1x1 input. SCALE-Sim's conv topology has one
image, so the forward tasks are compared at one sample; the backward GEMMs (activation and
weight gradients), which SCALE-Sim's conv topology cannot express, are compared through its
operand matrices of the same GEMM shapes as this script derives them from the convolution's
parameters (not from pipetwin's). Memory stalls are not compared: pipetwin's DRAM term is an
estimate of its own (docs/accelerators.md).

  bash scripts/install-python.sh             # the pipetwin package, in .venv
  .venv/bin/pip install scalesim             # SCALE-Sim; no other pipetwin part needs it
  .venv/bin/python experiments/systolic_vs_scalesim.py [--pipetwin build/bin/pipetwin] [--array 32x32]

Prints one row per layer task and dataflow, the largest and mean absolute differences, and exits
non-zero when a difference exceeds --tolerance (5%).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

NETWORKS = ["lenet5", "vgg16", "resnet20"]
DATAFLOWS = ["os", "ws", "is"]


def scalesim_config(folder, rows, cols, dataflow):
    from scalesim.scale_config import scale_config
    path = os.path.join(folder, f"array_{rows}x{cols}_{dataflow}.cfg")
    with open(path, "w") as f:
        f.write(f"""[general]
run_name = pipetwin_check
[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False
[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = 64
FilterSramSzkB = 64
OfmapSramSzkB = 64
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = {dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32
[layout]
IfmapCustomLayout = False
FilterCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2
[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40
""")
    config = scale_config()
    config.read_conf_file(path)
    return config


def compute_system(dataflow):
    from scalesim.compute.systolic_compute_is import systolic_compute_is
    from scalesim.compute.systolic_compute_os import systolic_compute_os
    from scalesim.compute.systolic_compute_ws import systolic_compute_ws
    return {"os": systolic_compute_os, "ws": systolic_compute_ws, "is": systolic_compute_is}[dataflow]()


def demand_cycles(config, dataflow, ifmap, filters, ofmap):
    """SCALE-Sim's stall-free compute cycles for operand matrices ifmap [Sr x T], filters [T x Sc]."""
    system = compute_system(dataflow)
    if dataflow == "ws":
        system.set_params(config_obj=config, ifmap_op_mat=ifmap, filter_op_mat=filters, ofmap_op_mat=ofmap,
                          sparsity_ratio_N=1, sparsity_ratio_M=1, ifmap_op_mat_original=ifmap,
                          sparsity_filter_array=None)
    else:
        system.set_params(config_obj=config, ifmap_op_mat=ifmap, filter_op_mat=filters, ofmap_op_mat=ofmap)
    system.create_demand_matrices()
    return int(system.ifmap_demand_matrix.shape[0])


def conv_cycles(config, dataflow, conv):
    """A convolution through SCALE-Sim's own topology and operand-matrix generation."""
    from scalesim.compute.operand_matrix import operand_matrix
    from scalesim.layout_utils import layouts
    from scalesim.topology_utils import topologies
    topology = topologies()
    # SCALE-Sim counts output rows as ceil((H - k + s) / s) of its (padded) input, PyTorch and
    # pipetwin as floor((H + 2p - k) / s) + 1: with a stride, a padded input can give SCALE-Sim one
    # row more. Giving it the rows the convolution reads, (out - 1) s + k, makes both the same.
    out_h = (conv["height"] + 2 * conv["padding"] - conv["kernel"]) // conv["stride"] + 1
    out_w = (conv["width"] + 2 * conv["padding"] - conv["kernel"]) // conv["stride"] + 1
    h, w = (out_h - 1) * conv["stride"] + conv["kernel"], (out_w - 1) * conv["stride"] + conv["kernel"]
    topology.load_layer_params_from_list(conv["name"], [conv["name"], h, w, conv["kernel"], conv["kernel"],
                                                        conv["channels"], conv["filters"], conv["stride"],
                                                        conv["stride"], 1, 1])
    layout = layouts()
    matrices = operand_matrix()
    matrices.set_params(config_obj=config, topoutil_obj=topology, layoututil_obj=layout, layer_id=0)
    matrices.create_operand_matrices()
    _, ifmap = matrices.get_ifmap_matrix()
    _, filters = matrices.get_filter_matrix()
    _, ofmap = matrices.get_ofmap_matrix()
    return demand_cycles(config, dataflow, ifmap, filters, ofmap)


def gemm_cycles(config, dataflow, m, k, n):
    """A GEMM [m x k] x [k x n] as SCALE-Sim's operand matrices (addresses are immaterial here)."""
    ifmap = np.arange(m * k, dtype=np.int64).reshape(m, k)
    filters = np.arange(k * n, dtype=np.int64).reshape(k, n) + 10_000_000
    ofmap = np.arange(m * n, dtype=np.int64).reshape(m, n) + 20_000_000
    return demand_cycles(config, dataflow, ifmap, filters, ofmap)


def network_convs(network):
    """Each conv and dense layer's convolution parameters, from pipetwin's Python API."""
    import pipetwin
    convs = []
    for layer in pipetwin.network_layers(network):
        if layer["type"] == "conv2d":
            spec = layer["conv2d"]
            channels, height, width = layer["input_shape"]
            convs.append({"name": layer["name"], "height": height, "width": width, "padding": spec["padding"],
                          "kernel": spec["kernel"], "stride": spec["stride"], "filters": spec["out_channels"],
                          "channels": channels, "groups": spec.get("groups", 1),
                          "connections": spec.get("connections", 0)})
        elif layer["type"] == "dense":
            convs.append({"name": layer["name"], "height": 1, "width": 1, "padding": 0, "kernel": 1, "stride": 1,
                          "filters": layer["dense"]["out_features"], "channels": math.prod(layer["input_shape"]),
                          "groups": 1, "connections": 0})
    return convs


def backward_gemms(conv, samples):
    """The activation- and weight-gradient GEMMs of a convolution: dX = dY W^T, dW = X^T dY."""
    out_h = (conv["height"] + 2 * conv["padding"] - conv["kernel"]) // conv["stride"] + 1
    out_w = (conv["width"] + 2 * conv["padding"] - conv["kernel"]) // conv["stride"] + 1
    window = conv["kernel"] * conv["kernel"] * conv["channels"]
    pixels = samples * out_h * out_w
    return {"BA": (pixels, conv["filters"], window), "BW": (window, pixels, conv["filters"])}


def pipetwin_cycles(pipetwin, network, dataflow, rows, cols, batch):
    args = [pipetwin, "kernels", "-m", network, "--hardware", "systolic", "--microbatches", "1", "--json",
            "--param", f"batch={batch}", "--param", f"dataflow={dataflow}", "--param", f"array_rows={rows}",
            "--param", f"array_cols={cols}"]
    rows_out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return {(r["layer"], r["kind"]): r["compute_cycles"] for r in rows_out}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipetwin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "pipetwin"))
    parser.add_argument("--array", default="32x32", help="rows x columns of the array (default 32x32)")
    parser.add_argument("--backward-samples", type=int, default=2, help="samples of the backward GEMMs compared")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    args = parser.parse_args()
    try:
        import scalesim  # noqa: F401
    except ImportError:
        sys.exit("systolic_vs_scalesim: needs SCALE-Sim: pip install scalesim")
    rows, cols = (int(x) for x in args.array.split("x"))
    table = []
    with tempfile.TemporaryDirectory() as folder:
        for network in NETWORKS:
            convs = network_convs(network)
            for dataflow in DATAFLOWS:
                config = scalesim_config(folder, rows, cols, dataflow)
                forward = pipetwin_cycles(args.pipetwin, network, dataflow, rows, cols, 1)
                backward = pipetwin_cycles(args.pipetwin, network, dataflow, rows, cols, args.backward_samples)
                for conv in convs:
                    if conv["groups"] != 1 or conv["connections"]:
                        continue  # grouped or sparse tables: SCALE-Sim has no such layer
                    theirs = conv_cycles(config, dataflow, conv)
                    table.append((network, conv["name"], "F", dataflow, forward[(conv["name"], "F")], theirs))
                    print(f"{network:9} {conv['name']:24} F  {dataflow}  pipetwin {table[-1][4]:>10}  scalesim {theirs:>10}",
                          flush=True)
                    for kind, (m, k, n) in backward_gemms(conv, args.backward_samples).items():
                        theirs = gemm_cycles(config, dataflow, m, k, n)
                        table.append((network, conv["name"], kind, dataflow, backward[(conv["name"], kind)], theirs))
                        print(f"{network:9} {conv['name']:24} {kind:2} {dataflow}  pipetwin {table[-1][4]:>10}  "
                              f"scalesim {theirs:>10}", flush=True)
    errors = [abs(ours - theirs) / theirs for *_, ours, theirs in table]
    worst = max(range(len(errors)), key=lambda i: errors[i])
    print(f"\n{len(table)} layer tasks x dataflows: mean |difference| {100 * sum(errors) / len(errors):.3f}%, "
          f"largest {100 * errors[worst]:.3f}% ({' '.join(str(x) for x in table[worst][:4])})")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("network,layer,kind,dataflow,pipetwin_cycles,scalesim_cycles\n")
            for row in table:
                f.write(",".join(str(x) for x in row) + "\n")
    return 0 if errors[worst] <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
