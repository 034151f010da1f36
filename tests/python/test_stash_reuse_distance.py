"""experiments/stash_reuse_distance.py on graphs laid out by hand: the bytes a processor passes
between stashing a layer's microbatch and reading it back, weighted by the stash's bytes, worked
out here by hand; the first minibatch and stashes another processor wrote left out of the mean;
and its error for an unknown network."""
import importlib.util
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "stash_reuse_distance.py")


def load_script():
    spec = importlib.util.spec_from_file_location("stash_reuse_distance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task(kind, layers, resource, order, minibatch=1, microbatch=0, parts=1):
    return {"kind": kind, "layers": list(layers), "resource": resource, "order": order, "placement": "processor",
            "minibatch": minibatch, "microbatch": microbatch, "parts": parts}


# Per sample: (input, output, stash) bytes of two layers.
SIZES = [(10, 20, 30), (20, 5, 40)]


def test_one_processor_forward_then_backward():
    graph = {"samples_per_microbatch": 2, "tasks": [
        task("F", (0, 1), 0, 0, minibatch=0),  # the first minibatch: passes bytes, counts no distance
        task("B", (0, 1), 0, 1, minibatch=0),
        task("F", (0, 1), 0, 2),
        task("B", (0, 1), 0, 3),
    ]}
    # Minibatch 0 passes 2 * (60 + 65) + 2 * (65 + 60) = 500 bytes. Minibatch 1's forward: layer 0
    # stashed at 500 + 120 = 620, layer 1 at 620 + 130 = 750. Its backward reads layer 1 at 750
    # (distance 0), passes 130, reads layer 0 at 880 (distance 260). Weighted by the stashes (80
    # and 60 bytes): (0 * 80 + 260 * 60) / 140.
    distances = load_script().distances(graph, SIZES)
    assert distances == {0: (pytest.approx(260 * 60 / 140), 0)}


def test_gpipe_order_holds_stashes_longer_and_remote_reads_stand_apart():
    two_microbatches = [
        task("F", (0, 0), 0, 0, microbatch=0),
        task("F", (0, 0), 0, 1, microbatch=1),
        task("B", (0, 0), 0, 2, microbatch=1),
        task("B", (0, 0), 0, 3, microbatch=0),
        task("BW", (0, 0), 1, 0, microbatch=0),  # reads on processor 1 what processor 0 stashed
    ]
    graph = {"samples_per_microbatch": 1, "tasks": two_microbatches}
    # Each forward passes 60, each backward 60. Microbatch 1: stashed at 120, read at 120
    # (distance 0); microbatch 0: stashed at 60, read at 180 (distance 120). Both stashes 30 bytes.
    distances = load_script().distances(graph, [SIZES[0]])
    assert distances[0] == (pytest.approx(60.0), 0)
    assert distances[1][1] == 30 and distances[1][0] != distances[1][0]  # no distance of its own: NaN


def test_an_unknown_network_is_named():
    done = subprocess.run([sys.executable, SCRIPT, "--model", "no-such-network"], capture_output=True, text=True)
    assert done.returncode == 1 and "no-such-network" in done.stderr
