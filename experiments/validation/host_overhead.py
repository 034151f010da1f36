#!/usr/bin/env python3
"""Measures the host time of eager PyTorch per operator for a Megatron-LM GPT layer.

The operator-level cost model (docs/cost-model.md) overlaps each layer's GPU kernels with the
host's work of issuing them: Python, the autograd engine and PyTorch's dispatcher, per operator.
This script measures that host work on this machine's CPU, on tensors so small (hidden 8,
sequence 4) that the arithmetic costs nothing, for two writings of one GPT transformer layer:

  plain               Megatron-LM's operators (layer norm, QKV projection, baddbmm scores,
                      scaled masked softmax, attention dropout, bmm context, transpose, output
                      projection, bias-dropout-add, MLP with GELU) as eager PyTorch modules
  megatron_deepspeed  the same operators in Megatron-DeepSpeed's Python structure: autograd
                      Functions for each linear, layer norm, bias-GeLU and softmax, the
                      tensor-parallel regions, the RNG tracker's fork, the activation checkpoint

and three parts of each:

  forward      the activation checkpoint's first forward (plain: under torch.no_grad)
  recompute    the forward again with autograd recording (checkpointing's recomputation)
  backward     autograd's backward of that forward

It counts the ATen operators each part runs (a TorchDispatchMode), prints the host time per
operator (the plain block's is the `dispatch_s` figure of the GPU hardware profiles, before
CUDA's own launch cost), and the Megatron-DeepSpeed block's time in plain operators' worth (the
plain part's operator count times the two structures' time ratio, timed in turns): the GPT
block's host operators in models/src/gpu_kernels.cpp. Needs PyTorch (CPU is enough):

    python3 experiments/validation/host_overhead.py [--repeats 2000] [--alternations 3] [--json]
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
        scores = torch.empty(b * self.heads, s, s, dtype=x.dtype, device=x.device)
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


# --- Megatron-DeepSpeed's structure ----------------------------------------------------------
# The same block as Megatron-DeepSpeed writes it (microsoft/Megatron-DeepSpeed, megatron/model/
# transformer.py, megatron/core/tensor_parallel/{layers,mappings,random}.py, megatron/model/
# fused_{layer_norm,bias_gelu,softmax}.py) at one tensor-parallel rank: its Python autograd
# Functions (each linear, the tensor-parallel regions' identities, apex's fused layer norm, the
# fused bias-GeLU and scaled masked softmax), the model-parallel RNG tracker's fork around the
# attention dropout, and the activation checkpoint's Function around the block (RNG states saved
# and restored, the forward replayed inside the backward). Each CUDA extension's kernel is one
# ATen operator here: the host work around it is what is timed.

def _device_rng_state():
    """get_accelerator().get_rng_state(): the GPU's generator on a GPU, else the CPU's."""
    return torch.cuda.get_rng_state() if torch.cuda.is_initialized() else torch.get_rng_state()


def _set_device_rng_state(state):
    if torch.cuda.is_initialized():
        torch.cuda.set_rng_state(state)
    else:
        torch.set_rng_state(state)


def _rng_fork(states, name, run):
    """CudaRNGStatesTracker.fork: swap in the tracked state, run, keep the advanced state."""
    original = _device_rng_state()
    _set_device_rng_state(states[name])
    try:
        return run()
    finally:
        states[name] = _device_rng_state()
        _set_device_rng_state(original)


class _CopyToRegion(torch.autograd.Function):  # mappings._CopyToModelParallelRegion, one rank
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output  # _reduce: one rank


class _ReduceFromRegion(torch.autograd.Function):  # mappings._ReduceFromModelParallelRegion
    @staticmethod
    def forward(ctx, input_):
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class _Linear(torch.autograd.Function):  # layers.LinearWithGradAccumulationAndAsyncCommunication
    @staticmethod
    def forward(ctx, input_, weight, bias):
        ctx.save_for_backward(input_, weight)
        ctx.use_bias = bias is not None
        output = torch.matmul(input_, weight.t())
        if bias is not None:
            output = output + bias
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input_, weight = ctx.saved_tensors
        grad_input = grad_output.matmul(weight)
        total_input = input_.contiguous()
        grad_output = grad_output.view(-1, grad_output.shape[-1])
        total_input = total_input.view(-1, total_input.shape[-1])
        grad_weight = grad_output.t().matmul(total_input)
        grad_bias = grad_output.sum(dim=0) if ctx.use_bias else None
        return grad_input, grad_weight, grad_bias


class _LayerNorm(torch.autograd.Function):  # apex FusedLayerNormAffineFunction
    @staticmethod
    def forward(ctx, input_, weight, bias, shape, eps):
        ctx.shape, ctx.eps = shape, eps
        input_ = input_.contiguous()
        output, mean, invvar = torch.native_layer_norm(input_, shape, weight, bias, eps)
        ctx.save_for_backward(input_, weight, bias, mean, invvar)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input_, weight, bias, mean, invvar = ctx.saved_tensors
        grads = torch.ops.aten.native_layer_norm_backward(grad_output.contiguous(), input_, ctx.shape, mean, invvar,
                                                          weight, bias, [True, True, True])
        return grads[0], grads[1], grads[2], None, None


# Megatron's bias-GeLU and bias-dropout-add are TorchScript functions that one fused kernel runs on
# a GPU; on a CPU TorchScript would run each elementwise operator apart. They are written here as
# the plain block writes them (the bias add and the GeLU; add, dropout, add), so that the two
# blocks differ only in their Python structure. TorchScript's own interpreter is left out.
def _bias_gelu(bias, y):
    return F.gelu(bias + y, approximate="tanh")


def _bias_gelu_back(g, bias, y):
    return torch.ops.aten.gelu_backward(g, bias + y, approximate="tanh")


class _BiasGelu(torch.autograd.Function):  # fused_bias_gelu.GeLUFunction
    @staticmethod
    def forward(ctx, input_, bias):
        ctx.save_for_backward(input_, bias)
        return _bias_gelu(bias, input_)

    @staticmethod
    def backward(ctx, grad_output):
        input_, bias = ctx.saved_tensors
        tmp = _bias_gelu_back(grad_output, bias, input_)
        return tmp, tmp


class _CausalSoftmax(torch.autograd.Function):  # fused_softmax.ScaledUpperTriangMaskedSoftmax
    @staticmethod
    def forward(ctx, inputs, scale):
        scale_t = torch.tensor([scale])
        results = torch.softmax(inputs, dim=-1)  # the extension's one kernel (its causal mask left out)
        ctx.save_for_backward(results, scale_t)
        return results

    @staticmethod
    def backward(ctx, output_grads):
        results, scale_t = ctx.saved_tensors
        return torch._softmax_backward_data(output_grads, results, -1, results.dtype), None


def _bias_dropout_add_train(x, bias, residual, prob: float):
    return residual + torch.nn.functional.dropout(x + bias, p=prob, training=True)


class _Checkpoint(torch.autograd.Function):  # random.CheckpointFunction (DeepSpeed's adds more)
    @staticmethod
    def forward(ctx, run_function, tracker, *args):
        ctx.run_function, ctx.tracker = run_function, tracker
        ctx.fwd_cpu_rng_state = torch.get_rng_state()
        ctx.fwd_cuda_rng_state = _device_rng_state()
        ctx.fwd_tracker_states = dict(tracker)
        with torch.no_grad():
            outputs = run_function(*args)
        ctx.save_for_backward(*args)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        bwd_cpu_rng_state, bwd_cuda_rng_state = torch.get_rng_state(), _device_rng_state()
        bwd_tracker_states = dict(ctx.tracker)
        torch.set_rng_state(ctx.fwd_cpu_rng_state)
        _set_device_rng_state(ctx.fwd_cuda_rng_state)
        ctx.tracker.update(ctx.fwd_tracker_states)
        detached = tuple(x.detach().requires_grad_(x.requires_grad) for x in inputs)
        with torch.enable_grad():
            outputs = ctx.run_function(*detached)
        torch.set_rng_state(bwd_cpu_rng_state)
        _set_device_rng_state(bwd_cuda_rng_state)
        ctx.tracker.update(bwd_tracker_states)
        torch.autograd.backward((outputs,), grads)
        return (None, None) + tuple(x.grad for x in detached)


class MegatronDeepSpeedLayer(torch.nn.Module):
    """ParallelTransformerLayer at one tensor-parallel rank, as Megatron-DeepSpeed runs it."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.hidden, self.heads, self.head_dim = hidden, heads, hidden // heads
        p = torch.nn.Parameter
        self.ln1_w, self.ln1_b = p(torch.ones(hidden)), p(torch.zeros(hidden))
        self.qkv_w, self.qkv_b = p(torch.randn(3 * hidden, hidden) * 0.1), p(torch.zeros(3 * hidden))
        self.proj_w, self.proj_b = p(torch.randn(hidden, hidden) * 0.1), p(torch.zeros(hidden))
        self.ln2_w, self.ln2_b = p(torch.ones(hidden)), p(torch.zeros(hidden))
        self.fc1_w, self.fc1_b = p(torch.randn(4 * hidden, hidden) * 0.1), p(torch.zeros(4 * hidden))
        self.fc2_w, self.fc2_b = p(torch.randn(hidden, 4 * hidden) * 0.1), p(torch.zeros(hidden))
        self.buffers_ = {}  # parallel_state's global memory buffer
        self.tracker = {"model-parallel-rng": _device_rng_state()}

    def column(self, x, weight, bias, skip_bias_add):  # ColumnParallelLinear: (output, bias)
        if skip_bias_add:
            return _Linear.apply(_CopyToRegion.apply(x), weight, None), bias
        return _Linear.apply(_CopyToRegion.apply(x), weight, bias), None

    def row(self, x, weight, bias):  # RowParallelLinear, skip_bias_add
        return _ReduceFromRegion.apply(_Linear.apply(x, weight, None)), bias

    def buffer(self, shape, like):  # GlobalMemoryBuffer.get_tensor
        numel = math.prod(shape)
        key = ("mpu", like.dtype, like.device)
        if key not in self.buffers_ or self.buffers_[key].numel() < numel:
            self.buffers_[key] = torch.empty(numel, dtype=like.dtype, device=like.device)
        return self.buffers_[key][0:numel].view(*shape)

    def attention(self, y, mask):
        s, b, _ = y.shape
        mixed, _ = self.column(y, self.qkv_w, self.qkv_b, skip_bias_add=False)
        mixed = mixed.view(s, b, self.heads, 3 * self.head_dim)
        q, k, v = torch.split(mixed, self.head_dim, dim=-1)
        q = q.view(s, b * self.heads, -1)
        k = k.view(s, b * self.heads, -1)
        scores = torch.baddbmm(self.buffer((b * self.heads, s, s), q), q.transpose(0, 1),
                               k.transpose(0, 1).transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(self.head_dim))
        scores = scores.view(b, self.heads, s, s)
        probs = _CausalSoftmax.apply(scores.view(-1, s, s), 1.0).view(b, self.heads, s, s)
        probs = _rng_fork(self.tracker, "model-parallel-rng", lambda: F.dropout(probs, p=0.1, training=True))
        v = v.reshape(s, b * self.heads, -1)
        context = torch.bmm(probs.view(b * self.heads, s, -1), v.transpose(0, 1))
        context = context.view(b, self.heads, s, self.head_dim).permute(2, 0, 1, 3).contiguous()
        return self.row(context.view(s, b, self.hidden), self.proj_w, self.proj_b)

    def block(self, x, mask):
        y = _LayerNorm.apply(x, self.ln1_w, self.ln1_b, [self.hidden], 1e-5)
        attention, attention_bias = self.attention(y, mask)
        with torch.enable_grad():
            x = _bias_dropout_add_train(attention, attention_bias.expand_as(x), x, 0.1)
        y = _LayerNorm.apply(x, self.ln2_w, self.ln2_b, [self.hidden], 1e-5)
        z, z_bias = self.column(y, self.fc1_w, self.fc1_b, skip_bias_add=True)  # bias_gelu_fusion
        z = _BiasGelu.apply(z, z_bias)
        out, out_bias = self.row(z, self.fc2_w, self.fc2_b)
        with torch.enable_grad():
            return _bias_dropout_add_train(out, out_bias.expand_as(x), x, 0.1)

    def forward(self, x, mask):  # DeepSpeed's PipelineModule checkpoints each block
        return _Checkpoint.apply(lambda h: self.block(h, mask), self.tracker, x)


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


# Each structure's parts, and the parts its backward run also runs before the backward itself
# (subtracted from that run's time and operators).

def plain_parts(layer, x, mask):
    """The plain block's parts: forward without autograd, recompute with it, and its backward."""
    def forward():
        with torch.no_grad():
            return layer(x, mask)

    def recompute():
        return layer(x, mask)

    def backward():  # the recompute's graph backward, with the recompute before it
        recompute().sum().backward()

    return (forward, recompute, backward), ("recompute",)


def megatron_parts(layer, x, mask):
    """Megatron-DeepSpeed's parts: the checkpointed forward (its Function, the block under
    no_grad), the block replayed with autograd, and the checkpoint's whole backward (RNG states,
    the replay, the block's backward) after the forward."""
    def forward():
        return layer(x, mask)

    def recompute():
        return layer.block(x, mask)

    def backward():  # the checkpoint's backward replays the block: forward and recompute before it
        forward().sum().backward()

    return (forward, recompute, backward), ("forward", "recompute")


def count_operators(forward, recompute, backward):
    counts = {}
    for name, function in (("forward", forward), ("recompute", recompute), ("all", backward)):
        with OperatorCounter() as counter:
            function()
        counts[name] = counter.count
    return counts


def measure(parts, repeats):
    forward, recompute, backward = parts
    forward_s, recompute_s, total_s = timed(forward, repeats), timed(recompute, repeats), timed(backward, repeats)
    return forward_s, recompute_s, total_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2000, help="runs per timing sample (7 samples, median)")
    parser.add_argument("--alternations", type=int, default=3,
                        help="times the two structures are timed in turn (the median of each part is kept)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(4, 1, 8, requires_grad=True)
    mask = torch.triu(torch.ones(1, 1, 4, 4, dtype=torch.bool), diagonal=1)
    structures = {"plain": plain_parts(MegatronLayer(hidden=8, heads=2), x, mask),
                  "megatron_deepspeed": megatron_parts(MegatronDeepSpeedLayer(hidden=8, heads=2), x, mask)}
    counts, samples = {}, {name: [] for name in structures}
    for name, (parts, before_backward) in structures.items():
        raw = count_operators(*parts)
        # The backward's own operators: the whole backward run's, less what ran before it.
        counts[name] = {"forward": raw["forward"], "recompute": raw["recompute"],
                        "backward": raw["all"] - sum(raw[part] for part in before_backward)}
    for _ in range(args.alternations):  # in turns, so that a change of the machine's speed meets both
        for name, (parts, _) in structures.items():
            samples[name].append(measure(parts, args.repeats))
    result = {"torch": torch.__version__, "operators": counts, "seconds": {}, "seconds_per_operator": {}}
    for name, (_, before_backward) in structures.items():
        forward_s, recompute_s, total_s = (statistics.median(s[i] for s in samples[name]) for i in range(3))
        seconds = {"forward": forward_s, "recompute": recompute_s}
        seconds["backward"] = total_s - sum(seconds[part] for part in before_backward)
        result["seconds"][name] = seconds
        result["seconds_per_operator"][name] = {part: seconds[part] / counts[name][part] for part in seconds}
    # Megatron-DeepSpeed's host time in plain operators' worth: the plain block's operator count
    # times the two structures' time ratio, part by part (timed in turns on the same machine).
    result["plain_operator_equivalents"] = {
        part: counts["plain"][part] * result["seconds"]["megatron_deepspeed"][part] / result["seconds"]["plain"][part]
        for part in ("forward", "recompute", "backward")}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"PyTorch {torch.__version__}, one thread, a GPT layer on tiny tensors (host work only)")
    for name in structures:
        print(f"  {name}:")
        for part in ("forward", "recompute", "backward"):
            print(f"    {part:<10} {counts[name][part]:>4} operators  {result['seconds'][name][part] * 1e6:8.1f} us"
                  f"  {result['seconds_per_operator'][name][part] * 1e6:6.2f} us per operator")
    print("  Megatron-DeepSpeed's host time, in the plain block's operators: " +
          ", ".join(f"{part} {value:.1f}" for part, value in result["plain_operator_equivalents"].items()))


if __name__ == "__main__":
    main()
