#!/usr/bin/env python3
"""Activation memory per layer: what pipetwin's model says a forward keeps for its backward
(network_layers' stash_bytes, per sample) against what PyTorch keeps for the same network
(torch.autograd.graph.saved_tensors_hooks, counted exactly on a CPU). PyTorch's saved tensors are
counted once per storage (a ReLU's output that the next convolution saves as its input is one
buffer), parameters left out, and each storage goes to the layer that saved it first; the loss's
saved tensors go to the last layer.

The network is the one experiments/cpu_vs_pytorch.py builds from pipetwin.network_layers, in
training mode (batch norm saves its batch statistics). PyTorch is needed (pip install torch).

    python experiments/saved_tensors_vs_pytorch.py [--models lenet5,resnet20,vgg16] [--batch 1,128]

Beside pipetwin's executors' convention it prints activation_memory=pytorch, the model of
PyTorch's saved tensors (models/src/framework_memory.cpp), and flags layer kinds where that model
is more than --tolerance (5%) off."""
import argparse
import importlib.util
import os

import pipetwin


def torch_network_builder():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("cpu_vs_pytorch", os.path.join(here, "cpu_vs_pytorch.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.torch_network


def layer_kind(layer):
    """A short name of what the layer does: conv+bn+relu+add+maxpool, dense+relu, dense+loss."""
    if layer["type"] == "conv2d":
        c = layer["conv2d"]
        parts = ["conv"] + [name for name, on in (("bn", c["batch_norm"]), ("add", c["residual_add"]),
                                                  ("relu", c["relu"])) if on]
        if c["pool"]["kind"] != "none":
            parts.append(c["pool"]["kind"] + "pool")
        return "+".join(parts)
    d = layer["dense"]
    return "dense" + ("+loss" if d["loss"] else "+relu" if d["relu"] else "")


def saved_bytes_per_layer(torch, net, layers, input_shape, classes, batch):
    """PyTorch's saved tensors of one forward (and its loss), in bytes per sample per layer."""
    parameters = {p.untyped_storage().data_ptr() for p in net.parameters()}
    seen = set()
    per_layer = [0] * len(layers)
    current = [0]

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            per_layer[current[0]] += storage.nbytes()
        return tensor

    net.on_layer = lambda i: current.__setitem__(0, i)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(batch, *input_shape, generator=generator)
    y = torch.randint(0, classes, (batch,), generator=generator)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = torch.nn.functional.cross_entropy(net(x), y)  # attributed to the last layer
    loss.backward()
    return [b / batch for b in per_layer]


def model_bytes(layer, batch):
    """pipetwin's bytes per sample for a layer: per-sample stash plus the per-microbatch part shared out."""
    return layer["stash_bytes"] + layer["stash_fixed_bytes"] / batch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="lenet5,resnet20,vgg16")
    parser.add_argument("--batch", default="8", help="batch sizes, comma-separated (e.g. 1,128)")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="flag layer kinds where pipetwin's activation_memory=pytorch is off by more than this")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("this comparison needs PyTorch (pip install torch)")
    build = torch_network_builder()
    worst = 0.0
    for batch in (int(b) for b in args.batch.split(",")):
        for model in args.models.split(","):
            layers = pipetwin.network_layers(model, {"batch": batch})
            modelled = pipetwin.network_layers(model, {"batch": batch, "activation_memory": "pytorch"})
            input_shape = layers[0]["input_shape"]
            classes = layers[-1]["dense"]["out_features"]
            # The layer being run, told to whichever counter saved_bytes_per_layer sets as net.on_layer.
            net = build(torch, layers, input_shape, on_layer=lambda i: net.on_layer(i))
            net.train()
            saved = saved_bytes_per_layer(torch, net, layers, input_shape, classes, batch)
            by_kind = {}
            print(f"{model} (batch {batch}; bytes per sample; 'executor' is pipetwin's executors' convention, "
                  f"'model' is activation_memory=pytorch)")
            print(f"  {'layer':<24} {'kind':<26} {'executor':>10} {'model':>10} {'pytorch':>10} {'model/pt':>8}")
            for layer, ours, torch_bytes in zip(layers, modelled, saved):
                kind = layer_kind(layer)
                executor, predicted = model_bytes(layer, batch), model_bytes(ours, batch)
                totals = by_kind.setdefault(kind, [0, 0, 0, 0])
                for i, value in enumerate((executor, predicted, torch_bytes, 1)):
                    totals[i] += value
                ratio = f"{predicted / torch_bytes:.3f}" if torch_bytes else "-"
                print(f"  {layer['name']:<24} {kind:<26} {executor:>10.0f} {predicted:>10.1f} {torch_bytes:>10.1f} {ratio:>8}")
            print(f"  {'by kind':<24}")
            for kind, (executor, predicted, theirs, count) in sorted(by_kind.items()):
                ratio = predicted / theirs if theirs else 1.0
                worst = max(worst, abs(ratio - 1))
                flag = "  <- beyond tolerance" if abs(ratio - 1) > args.tolerance else ""
                print(f"  {kind:<24} x{count:<3} {'':<21} {executor:>10.0f} {predicted:>10.1f} {theirs:>10.1f} {ratio:>8.3f}{flag}")
            executor = sum(model_bytes(l, batch) for l in layers)
            predicted = sum(model_bytes(l, batch) for l in modelled)
            theirs = sum(saved)
            print(f"  {'network':<51} {executor:>10.0f} {predicted:>10.1f} {theirs:>10.1f} {predicted / theirs:>8.3f}\n")
    print(f"largest error of activation_memory=pytorch over all layer kinds: {100 * worst:.2f}%")


if __name__ == "__main__":
    main()
