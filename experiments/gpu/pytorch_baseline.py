#!/usr/bin/env python3
"""PyTorch baseline for the CUDA executor's one-processor step time (issue 6).

Trains the same network as pipetwin (lenet5, resnet20/56, vgg16 on CIFAR shapes; the layer specs of
models/src/builtin_networks.cpp) on the same GPU with the same step: a minibatch of `batch` samples
in M microbatches, gradients accumulated, one SGD step; batch norm with each microbatch's own
statistics, fp32 (TF32 off). Synthetic data of the network's input shape, already on the GPU.
It times eager PyTorch and torch.compile (where it works), and pipetwin's own one-processor run
(`pipetwin run --device cuda --placement streams -s sequential -p 1 --json`, the steady-state step),
and prints one table (and --json).

    python3 experiments/gpu/pytorch_baseline.py --pipetwin build-gpu/bin/pipetwin -m resnet56

Needs torch on the GPU machine; without it the script says so and exits 3.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def build(model, torch):
    nn = torch.nn

    class ConvLayer(nn.Module):
        """pipetwin's conv2d layer: conv (+bias) -> BN -> (+shortcut) -> ReLU -> pool."""

        def __init__(self, cin, cout, k, stride, pad, bias=True, bn=False, pool=None, residual=False):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, stride, pad, bias=bias)
            self.bn = nn.BatchNorm2d(cout, eps=1e-5, momentum=None, track_running_stats=False) if bn else None
            self.pool, self.residual, self.cout = pool, residual, cout

        def forward(self, x, block_input=None):
            z = self.conv(x)
            if self.bn is not None:
                z = self.bn(z)
            if self.residual:  # option A: subsample by the stride, zero-pad channels
                s = block_input
                if s.shape[-1] != z.shape[-1]:
                    s = s[:, :, ::2, ::2]
                if s.shape[1] != self.cout:
                    pad = self.cout - s.shape[1]
                    s = nn.functional.pad(s, (0, 0, 0, 0, pad // 2, pad - pad // 2))
                z = z + s
            z = torch.relu(z)
            if self.pool == "max":
                z = nn.functional.max_pool2d(z, 2, 2)
            elif self.pool == "global-avg":
                z = z.mean(dim=(2, 3))
            return z

    class Net(nn.Module):
        def __init__(self, convs, dense, input_shape):
            super().__init__()
            self.convs = nn.ModuleList(convs)
            self.dense = nn.ModuleList(dense)
            self.input_shape = input_shape

        def forward(self, x):
            block_input = None
            for layer in self.convs:
                out = layer(x, block_input)
                block_input = x  # the input of the layer before the one that adds the residual
                x = out
            x = x.flatten(1)
            for i, layer in enumerate(self.dense):
                x = layer(x)
                if i + 1 < len(self.dense):
                    x = torch.relu(x)
            return x

    if model == "lenet5":
        convs = [ConvLayer(1, 6, 5, 1, 2, pool="max"), ConvLayer(6, 16, 5, 1, 0, pool="max")]
        dense = [nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)]
        return Net(convs, dense, (1, 28, 28))
    if model.startswith("resnet"):
        blocks = (int(model[6:]) - 2) // 6
        convs = [ConvLayer(3, 16, 3, 1, 1, bias=False, bn=True)]
        cin = 16
        for stage, width in enumerate((16, 32, 64)):
            for block in range(blocks):
                stride = 2 if stage > 0 and block == 0 else 1
                convs.append(ConvLayer(cin, width, 3, stride, 1, bias=False, bn=True))
                last = stage == 2 and block + 1 == blocks
                convs.append(ConvLayer(width, width, 3, 1, 1, bias=False, bn=True, residual=True,
                                       pool="global-avg" if last else None))
                cin = width
        return Net(convs, [nn.Linear(64, 10)], (3, 32, 32))
    if model == "vgg16":
        convs, cin = [], 3
        for group in ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512)):
            for i, width in enumerate(group):
                convs.append(ConvLayer(cin, width, 3, 1, 1, bn=True, pool="max" if i + 1 == len(group) else None))
                cin = width
        return Net(convs, [nn.Linear(512, 512), nn.Linear(512, 512), nn.Linear(512, 10)], (3, 32, 32))
    raise SystemExit(f"pytorch_baseline: no PyTorch definition of '{model}' (lenet5, resnet20, resnet56, vgg16)")


def time_steps(step, steps, torch):
    for _ in range(3):  # warm-up (and compilation)
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        begin = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def pipetwin_step_s(binary, model, batch, microbatches, steps):
    command = [binary, "run", "--device", "cuda", "--placement", "streams", "-s", "sequential", "-p", "1",
               "-m", model, "--param", f"batch={batch}", "--microbatches", str(microbatches),
               "--steps", str(steps), "--data", "synthetic", "-q", "--json"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["iteration_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", action="append", help="network (repeatable; default resnet56 and vgg16)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20, help="timed steps (median kept)")
    parser.add_argument("--pipetwin", default="build-gpu/bin/pipetwin", help="the pipetwin binary built with CUDA")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("pytorch_baseline: torch is not installed on this machine; nothing measured", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("pytorch_baseline: torch sees no CUDA device; nothing measured", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for model in args.model or ["resnet56", "vgg16"]:
        net = build(model, torch).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        n = args.batch // args.microbatches
        x = torch.randn(args.microbatches, n, *net.input_shape, device="cuda")
        y = torch.randint(0, 10, (args.microbatches, n), device="cuda")
        loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")

        def make_step(forward):
            def step():
                opt.zero_grad(set_to_none=True)
                for m in range(args.microbatches):
                    (loss_fn(forward(x[m]), y[m]) / args.batch).backward()
                opt.step()
            return step

        row = {"model": model, "batch": args.batch, "microbatches": args.microbatches,
               "eager_step_s": time_steps(make_step(net), args.steps, torch)}
        try:
            row["compiled_step_s"] = time_steps(make_step(torch.compile(net)), args.steps, torch)
        except Exception as error:  # torch.compile needs a working Triton / compiler toolchain
            row["compiled_step_s"] = None
            row["compile_error"] = str(error).splitlines()[0][:200]
        try:
            row["pipetwin_step_s"] = pipetwin_step_s(args.pipetwin, model, args.batch, args.microbatches, args.steps)
        except (OSError, subprocess.CalledProcessError) as error:
            row["pipetwin_step_s"] = None
            row["pipetwin_error"] = str(error)[:200]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'model':>9} {'eager_ms':>9} {'compiled_ms':>11} {'pipetwin_ms':>11} {'pipetwin/eager':>14}")
    for r in rows:
        ms = lambda v: f"{v * 1e3:.2f}" if v else "-"
        ratio = f"{r['pipetwin_step_s'] / r['eager_step_s']:.2f}x" if r.get("pipetwin_step_s") else "-"
        print(f"{r['model']:>9} {ms(r['eager_step_s']):>9} {ms(r['compiled_step_s']):>11} "
              f"{ms(r['pipetwin_step_s']):>11} {ratio:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
