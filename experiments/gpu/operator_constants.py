#!/usr/bin/env python3
"""Measures, on the GPU this runs on, the figures the operator cost model assumes or took from
elsewhere (docs/cost-model.md, "operator"), and checks its kernel times against PyTorch's:

  memory_efficiency   a 1 GiB copy's bandwidth over the profile's rated bandwidth
  kernel_s            GPU time per tiny kernel, replayed from a CUDA graph (no host in the way)
  dispatch + launch   host time per eager operator on CUDA tensors (the model: dispatch_s + launch_s)
  GEMMs               every GEMM of a GPT block (`pipetwin kernels --json`), timed with cuBLAS
                      through torch.matmul replayed from a CUDA graph (and eagerly, one call
                      between two events: the host's dispatch then shows), against the model's time
  a GPT block         forward, and forward + backward, timed on the GPU, as plain eager modules
                      and in Megatron-DeepSpeed's structure (checkpointed), against the model's F,
                      RC and BA + BW (the host-bound regime included: micro-batch 1 at hidden 1024)

    python3 experiments/gpu/operator_constants.py --pipetwin build-gpu/bin/pipetwin --hardware h100 --out DIR

Needs PyTorch with CUDA (on the device machine; experiments/gpu/gpu.sh constants). `--device cpu`
runs the plumbing without a GPU (host figures only, the GPU ones are skipped with a message).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "validation"))


def pipetwin_json(pipetwin, *args):
    done = subprocess.run([pipetwin, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join([pipetwin, *args])}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def gpu_seconds(torch, function, repeats=20):
    """Median GPU time of function() from CUDA events."""
    function()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return statistics.median(samples)


def graph_seconds(torch, function, count=20):
    """GPU time of one function() alone: `count` calls captured in a CUDA graph, replayed between
    two events (median of gpu_seconds), over `count`. Eager calls timed one by one include the host's
    dispatch of each (about 10 us), which exceeds a small GEMM's kernel."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as capture requires
        for _ in range(3):
            function()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(count):
            function()
    return gpu_seconds(torch, graph.replay) / count


def host_seconds_per_operator(torch, device, count=20000):
    x = torch.zeros(16, device=device)
    for _ in range(1000):
        x.add_(1)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        x.add_(1)
    host = (time.perf_counter() - start) / count
    if device == "cuda":
        torch.cuda.synchronize()
    return host


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipetwin", required=True, help="the pipetwin binary")
    parser.add_argument("--hardware", default="h100", help="the pipetwin profile of this GPU")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out", default=".", help="folder for operator_constants.json")
    args = parser.parse_args()
    import torch

    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch; --device cpu runs the host figures only")
    profile = next(h for h in pipetwin_json(args.pipetwin, "hardware", "--json") if h["name"] == args.hardware)
    result = {"hardware": args.hardware, "torch": torch.__version__, "device": device}
    if device == "cuda":
        result["gpu"] = torch.cuda.get_device_name()

    # Host time per eager operator on this device's tensors.
    result["host_s_per_operator"] = host_seconds_per_operator(torch, device)
    print(f"host per eager operator: {result['host_s_per_operator'] * 1e6:.2f} us (model: dispatch_s + launch_s)")

    if device != "cuda":
        print("GPU figures skipped: --device cpu")
    else:
        # Achievable bandwidth: a 1 GiB copy reads and writes 1 GiB each.
        a = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)
        copy_s = gpu_seconds(torch, lambda: b.copy_(a))
        result["memory_efficiency"] = 2 * a.numel() * 4 / copy_s / profile["memory_bytes_per_s"]
        print(f"1 GiB copy: {2 * a.numel() * 4 / copy_s / 1e12:.3f} TB/s = {result['memory_efficiency']:.3f} of rated")
        del a, b
        # The least time of a kernel: 1000 tiny kernels replayed from a CUDA graph.
        x = torch.zeros(16, device="cuda")
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(3):
                x.add_(1)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(1000):
                x.add_(1)
        result["kernel_s"] = gpu_seconds(torch, graph.replay) / 1000
        print(f"least kernel time (graph replay): {result['kernel_s'] * 1e6:.2f} us")

        # Every GEMM of a GPT block, measured against the model.
        layers = {}
        for hidden, batch in ((1024, 1), (1024, 8), (2048, 4)):
            params = [f"hidden={hidden}", "heads=16", "seq=1024", f"batch={batch}", "layers=1", "vocab=50304",
                      "dtype_bytes=2", "precision=fp16"]
            listing = pipetwin_json(args.pipetwin, "kernels", "--hardware", args.hardware, "--layer", "block1", "--json",
                                    *sum((["--param", p] for p in params), []))
            rows = []
            for part in listing:
                if part["kind"] == "RC":  # the forward's kernels again
                    continue
                for k in part["kernels"]:
                    if "gemm" not in k:
                        continue
                    m, n, kk, batches = (int(v) for v in k["gemm"])
                    A = torch.randn(batches, m, kk, dtype=torch.float16, device="cuda")
                    B = torch.randn(batches, kk, n, dtype=torch.float16, device="cuda")
                    eager = gpu_seconds(torch, lambda: torch.matmul(A, B))
                    measured = graph_seconds(torch, lambda: torch.matmul(A, B))
                    rows.append({"kernel": f"{part['kind']} {k['name']}", "shape": [m, n, kk, batches],
                                 "predicted_s": k["seconds"], "measured_s": measured, "measured_eager_s": eager})
                    del A, B
            layers[f"h{hidden}-b{batch}"] = {"gemms": rows, "parts": listing}
            print(f"GPT block, hidden {hidden}, micro-batch {batch}: GEMMs predicted, measured (graph replay; "
                  f"eager, one call between events), predicted/measured")
            for r in rows:
                print(f"  {r['kernel']:<28} {str(r['shape']):<26} {r['predicted_s'] * 1e6:8.1f} us "
                      f"{r['measured_s'] * 1e6:8.1f} us ({r['measured_eager_s'] * 1e6:6.1f} us)  "
                      f"{r['predicted_s'] / r['measured_s']:.2f}")
        result["gpt_block"] = layers

        # A GPT block, forward and forward + backward, against the model's F and BA + BW: as plain
        # eager modules, and in Megatron-DeepSpeed's structure (checkpointed: its forward under
        # the checkpoint, its backward replaying the forward), which the model's host prices.
        from host_overhead import MegatronDeepSpeedLayer, MegatronLayer
        for hidden, batch in ((1024, 1), (2048, 4)):
            torch.manual_seed(0)
            x = torch.randn(1024, batch, hidden, dtype=torch.float16, device="cuda", requires_grad=True)
            mask = torch.triu(torch.ones(1, 1, 1024, 1024, dtype=torch.bool, device="cuda"), diagonal=1)
            plain = MegatronLayer(hidden, 16).to("cuda", torch.float16)
            structured = MegatronDeepSpeedLayer(hidden, 16).to("cuda", torch.float16)

            def plain_forward():
                with torch.no_grad():
                    plain(x, mask)

            def plain_forward_backward():
                plain(x, mask).sum().backward()

            def structured_forward():
                structured(x, mask)

            def structured_forward_backward():  # forward, then recomputation and backward
                structured(x, mask).sum().backward()

            parts = {p["kind"]: p["cost_s"] for p in layers.get(f"h{hidden}-b{batch}", {}).get("parts", [])}
            predicted_f = parts.get("F", float("nan"))
            predicted_rc = parts.get("RC", float("nan"))
            predicted_b = parts.get("BA", 0) + parts.get("BW", 0)
            entry = {"predicted_forward_s": predicted_f, "predicted_recompute_s": predicted_rc,
                     "predicted_backward_s": predicted_b}
            for name, forward, both in (("plain", plain_forward, plain_forward_backward),
                                        ("megatron_deepspeed", structured_forward, structured_forward_backward)):
                f_s, fb_s = gpu_seconds(torch, forward, 10), gpu_seconds(torch, both, 10)
                entry[name] = {"forward_s": f_s, "forward_backward_s": fb_s}
                print(f"block h{hidden} b{batch}, {name}: forward {f_s * 1e3:.3f} ms, forward+backward "
                      f"{fb_s * 1e3:.3f} ms")
            print(f"  model: forward {predicted_f * 1e3:.3f} ms; checkpointed forward, recomputation and backward "
                  f"{(predicted_f + predicted_rc + predicted_b) * 1e3:.3f} ms (the megatron_deepspeed forward+backward)")
            result[f"block_h{hidden}_b{batch}"] = entry

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "operator_constants.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {os.path.join(args.out, 'operator_constants.json')}")


if __name__ == "__main__":
    main()
