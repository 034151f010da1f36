#!/usr/bin/env python3
"""One training step on one CPU thread: pipetwin's CPU executor against PyTorch, on the same
networks (built layer by layer from pipetwin.network_layers), the same batch, microbatches and
plain SGD. Prints each side's median step time, its GFLOP/s (the networks' training FLOPs per
step over the step time) against the core's peak (a large fp32 matrix product on one thread), and
the ratio pipetwin / PyTorch (issue 16's target: at most 1.2).

PyTorch is optional: without it only pipetwin's figures are printed. The two sides take turns
(pipetwin, PyTorch, pipetwin, ...), so that a drift of the machine's speed touches both alike.

    python experiments/cpu_vs_pytorch.py [--models lenet5,resnet20] [--batch 128]
        [--microbatches 4] [--steps 8] [--rounds 3]"""
import argparse
import statistics
import time

import pipetwin


def training_flops_per_step(layers, batch):
    return batch * sum(l["forward_flops"] + l["activation_grad_flops"] + l["weight_grad_flops"] for l in layers)


def pipetwin_step_s(model, batch, microbatches, steps):
    """Steady-state seconds per minibatch of the one-processor sequential schedule."""
    run = pipetwin.run(model=model, schedule="sequential", processors=1, microbatches=microbatches,
                       minibatches=steps, params={"batch": batch}, data="synthetic")
    return run.result.iteration_s


def torch_network(torch, layers, input_shape, on_layer=None):
    """The network pipetwin's executors run, in PyTorch: conv (+ batch norm) (+ option-A residual
    shortcut) + ReLU + pooling; dense (+ ReLU); softmax cross-entropy on the last layer.
    on_layer(i), when given, is called as layer i's forward begins."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.specs = layers
            self.blocks = nn.ModuleList()
            for layer in layers:
                parts = nn.ModuleDict()
                if layer["type"] == "conv2d":
                    c = layer["conv2d"]
                    parts["conv"] = nn.Conv2d(layer["input_shape"][0], c["out_channels"], c["kernel"], c["stride"],
                                              c["padding"], groups=c["groups"], bias=c["bias"])
                    if c["batch_norm"]:
                        parts["bn"] = nn.BatchNorm2d(c["out_channels"])
                elif layer["type"] == "dense":
                    inputs = 1
                    for d in layer["input_shape"]:
                        inputs *= d
                    parts["fc"] = nn.Linear(inputs, layer["dense"]["out_features"], bias=layer["dense"]["bias"])
                else:
                    raise SystemExit(f"layer type {layer['type']} has no PyTorch counterpart here")
                self.blocks.append(parts)

        def forward(self, x):
            shortcut = None
            for i, (layer, parts) in enumerate(zip(self.specs, self.blocks)):
                if on_layer is not None:
                    on_layer(i)
                following = self.specs[i + 1] if i + 1 < len(self.specs) else None
                feeds = following is not None and following["type"] == "conv2d" and following["conv2d"]["residual_add"]
                block_input = x
                if layer["type"] == "conv2d":
                    c = layer["conv2d"]
                    x = parts["conv"](x)
                    if "bn" in parts:
                        x = parts["bn"](x)
                    if c["residual_add"]:
                        s = shortcut
                        if s.shape[1:] != x.shape[1:]:  # option A: subsample, zero-pad the channels
                            stride = s.shape[2] // x.shape[2]
                            s = s[:, :, ::stride, ::stride]
                            pad = (x.shape[1] - s.shape[1]) // 2
                            s = torch.nn.functional.pad(s, (0, 0, 0, 0, pad, x.shape[1] - s.shape[1] - pad))
                        x = x + s
                    if c["relu"]:
                        x = torch.relu(x)
                    pool = c["pool"]
                    if pool["kind"] == "max":
                        x = torch.nn.functional.max_pool2d(x, pool["kernel"], pool["stride"])
                    elif pool["kind"] == "avg":
                        x = torch.nn.functional.avg_pool2d(x, pool["kernel"], pool["stride"])
                    elif pool["kind"] == "global-avg":
                        x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
                else:
                    x = parts["fc"](x.flatten(1))
                    if layer["dense"]["relu"] and not layer["dense"]["loss"]:
                        x = torch.relu(x)
                if feeds:
                    shortcut = block_input
            return x

    return Net()


def torch_step_s(torch, net, input_shape, classes, batch, microbatches, steps):
    """Median seconds of one step: every microbatch forward and backward, then one SGD update."""
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    loss_of = torch.nn.CrossEntropyLoss()
    samples = batch // microbatches
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(microbatches, samples, *input_shape, generator=generator)
    y = torch.randint(0, classes, (microbatches, samples), generator=generator)
    times = []
    for step in range(steps + 2):  # two warm-up steps
        begin = time.perf_counter()
        for m in range(microbatches):
            loss_of(net(x[m]), y[m]).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        if step >= 2:
            times.append(time.perf_counter() - begin)
    return statistics.median(times)


def core_peak_flops(torch):
    """fp32 GFLOP/s of a 1024^3 matrix product on one thread, the best of five."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = float("inf")
    for _ in range(5):
        begin = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - begin)
    return 2 * 1024 ** 3 / best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="lenet5,resnet20")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3, help="turns of pipetwin then PyTorch")
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except ImportError:
        torch = None
        print("PyTorch is not installed: pipetwin's figures only (pip install torch for the comparison)")
    peak = core_peak_flops(torch) if torch is not None else None
    if peak is not None:
        print(f"core peak (fp32 1024^3 matrix product, one thread, PyTorch {torch.__version__}): {peak / 1e9:.1f} GFLOP/s")
    print(f"{'model':<10} {'side':<9} {'step ms':>9} {'GFLOP/s':>8} {'of peak':>8}")
    for model in args.models.split(","):
        layers = pipetwin.network_layers(model, {"batch": args.batch})
        flops = training_flops_per_step(layers, args.batch)
        mine, theirs = [], []
        net = None
        if torch is not None:
            input_shape = tuple(layers[0]["input_shape"])
            classes = layers[-1]["dense"]["out_features"]
            net = torch_network(torch, layers, input_shape)
        for _ in range(args.rounds):
            mine.append(pipetwin_step_s(model, args.batch, args.microbatches, args.steps))
            if net is not None:
                theirs.append(torch_step_s(torch, net, input_shape, classes, args.batch, args.microbatches, args.steps))
        sides = [("pipetwin", statistics.median(mine))]
        if theirs:
            sides.append(("pytorch", statistics.median(theirs)))
        for side, step_s in sides:
            of_peak = f"{100 * flops / step_s / peak:7.1f}%" if peak else "       -"
            print(f"{model:<10} {side:<9} {1e3 * step_s:9.2f} {flops / step_s / 1e9:8.2f} {of_peak}")
        if theirs:
            print(f"{model:<10} ratio pipetwin / PyTorch: {sides[0][1] / sides[1][1]:.2f}x")


if __name__ == "__main__":
    main()
