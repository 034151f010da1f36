#!/usr/bin/env python3
"""Measures the host time of eager PyTorch per operator for a Megatron-LM GPT layer.

The operator-level cost model (docs/cost-model.md) overlaps each layer's GPU kernels with the
host's work of issuing them: Python, the autograd engine and PyTorch's dispatcher, per operator.
This script measures that host work on this machine's CPU. It builds one GPT transformer layer
with Megatron-LM's structure (layer norm, QKV projection, baddbmm scores, scaled masked softmax,
attention dropout, bmm context, transpose, output projection, bias-dropout-add, MLP with GELU)
on tensors so small (hidden 8, sequence 4) that the arithmetic costs nothing, and times:

  forward      under torch.no_grad, as activation checkpointing runs the first forward
  recompute    the forward again with autograd recording (checkpointing's recomputation)
  backward     autograd's backward of that forward

It counts the ATen operators each part runs (a TorchDispatchMode) and prints the host time per
operator: that is the `dispatch_s` figure of the GPU hardware profiles, before CUDA's own launch
cost. Needs PyTorch (CPU is enough):

    python3 experiments/validation/host_overhead.py [--repeats 2000]
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode


class OperatorCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


class MegatronLayer(torch.nn.Module):
    """A pre-layer-norm GPT block written as Megatron-LM writes it ([s, b, h] activations)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.proj_bias = torch.nn.Parameter(torch.zeros(hidden))
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden, bias=False)
        self.fc1_bias = torch.nn.Parameter(torch.zeros(4 * hidden))
        self.fc2 = torch.nn.Linear(4 * hidden, hidden, bias=False)
        self.fc2_bias = torch.nn.Parameter(torch.zeros(hidden))

    @staticmethod
    def bias_dropout_add(x, bias, residual):
        return residual + F.dropout(x + bias, p=0.1, training=True)

    def forward(self, x, mask):
        s, b, h = x.shape
        y = self.ln1(x)
        mixed = self.qkv(y).view(s, b, self.heads, 3 * self.head_dim)
        q, k, v = torch.split(mixed, self.head_dim, dim=-1)
        q = q.reshape(s, b * self.heads, self.head_dim)
        k = k.reshape(s, b * self.heads, self.head_dim)
        scores = torch.empty(b * self.heads, s, s, dtype=x.dtype)
        scores = torch.baddbmm(scores, q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0 / math.sqrt(self.head_dim))
        scores = scores.view(b, self.heads, s, s).masked_fill(mask, -10000.0)
        probs = F.dropout(torch.softmax(scores, dim=-1), p=0.1, training=True)
        v = v.reshape(s, b * self.heads, self.head_dim)
        context = torch.bmm(probs.view(b * self.heads, s, s), v.transpose(0, 1))
        context = context.view(b, self.heads, s, self.head_dim).permute(2, 0, 1, 3).contiguous().view(s, b, h)
        x = self.bias_dropout_add(self.proj(context), self.proj_bias.expand_as(x), x)
        y = self.ln2(x)
        z = F.gelu(self.fc1(y) + self.fc1_bias)
        return self.bias_dropout_add(self.fc2(z), self.fc2_bias.expand_as(x), x)


def timed(function, repeats):
    for _ in range(repeats // 10 + 1):  # warm-up
        function()
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(repeats):
            function()
        samples.append((time.perf_counter() - start) / repeats)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2000, help="runs per timing sample (7 samples, median)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layer = MegatronLayer(hidden=8, heads=2)
    x = torch.randn(4, 1, 8, requires_grad=True)
    mask = torch.triu(torch.ones(1, 1, 4, 4, dtype=torch.bool), diagonal=1)

    def forward():
        with torch.no_grad():
            layer(x, mask)

    def recompute_and_backward():
        layer(x, mask).sum().backward()

    def recompute():
        return layer(x, mask)

    counts = {}
    for name, function in (("forward", forward), ("recompute", recompute)):
        with OperatorCounter() as counter:
            out = function()
        counts[name] = counter.count
    out = recompute()
    loss = out.sum()
    with OperatorCounter() as counter:
        loss.backward()
    counts["backward"] = counter.count

    forward_s = timed(forward, args.repeats)
    recompute_s = timed(recompute, args.repeats)
    both_s = timed(recompute_and_backward, args.repeats)
    backward_s = both_s - recompute_s
    result = {
        "torch": torch.__version__,
        "operators": counts,
        "seconds": {"forward": forward_s, "recompute": recompute_s, "backward": backward_s},
        "seconds_per_operator": {
            "forward": forward_s / counts["forward"],
            "recompute": recompute_s / counts["recompute"],
            "backward": backward_s / counts["backward"],
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"PyTorch {torch.__version__}, one thread, a Megatron-LM GPT layer on tiny tensors (host work only)")
    for part in ("forward", "recompute", "backward"):
        print(f"  {part:<10} {counts[part]:>4} operators  {result['seconds'][part] * 1e6:8.1f} us"
              f"  {result['seconds_per_operator'][part] * 1e6:6.2f} us per operator")


if __name__ == "__main__":
    main()
