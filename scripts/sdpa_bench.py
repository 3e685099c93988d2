#!/usr/bin/env python3
"""PyTorch SDPA baselines for `rustile attention bench`, timed the way rustile times itself.

For each shape: `torch.nn.functional.scaled_dot_product_attention` on fp16 (or bf16) tensors in
PyTorch's (batch, heads, seq, head_dim) layout, with the FlashAttention-2 backend and the cuDNN
backend forced in turn (`torch.nn.attention.sdpa_kernel`). Timing: warm-up, then every rep
flushes L2 (writes a 256 MiB buffer), records CUDA events around one call, and the median is
reported. TFLOP/s counts 4·B·H·Nq·Nkv·d, halved for causal.

Usage: sdpa_bench.py [--dtype f16|bf16] [--reps 30] [--shapes B,H,N,D,causal;...] [--out FILE]
Without --shapes: the issue's sweep, N = 512 … 16384 with B·N = 16·16384, H = 16, d 64/128,
causal and not. Output: one JSON object per line (also written to --out).
"""

import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def default_shapes():
    out = []
    for d in (64, 128):
        for n in (512, 1024, 2048, 4096, 8192, 16384):
            b = max(1, 16 * 16384 // (16 * n))
            for causal in (False, True):
                out.append((b, 16, n, d, causal))
    return out


def parse_shapes(s):
    out = []
    for item in s.split(";"):
        b, h, n, d, c = item.split(",")
        out.append((int(b), int(h), int(n), int(d), c.strip().lower() in ("1", "true", "causal")))
    return out


def time_backend(backend, q, k, v, causal, reps, flush):
    with sdpa_kernel([backend]):
        for _ in range(5):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    dt = torch.float16 if a.dtype == "f16" else torch.bfloat16
    shapes = parse_shapes(a.shapes) if a.shapes else default_shapes()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.backends.cudnn.benchmark = True
    lines = []
    for (b, h, n, d, causal) in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dt, generator=g) for _ in range(3))
        flops = 4.0 * b * h * n * n * d / (2.0 if causal else 1.0)
        row = {"b": b, "h": h, "n": n, "d": d, "causal": causal, "dtype": a.dtype}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                ms = time_backend(backend, q, k, v, causal, a.reps, flush)
                row[name + "_ms"] = round(ms, 5)
                row[name + "_tflops"] = round(flops / ms / 1e9, 1)
            except Exception as e:  # a backend that cannot run the shape
                row[name + "_error"] = str(e).splitlines()[0][:200]
        lines.append(json.dumps(row))
        print(lines[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
