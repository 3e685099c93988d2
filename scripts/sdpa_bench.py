#!/usr/bin/env python3
"""PyTorch SDPA baselines for `rustile attention bench`, timed the way rustile times itself.

For each shape: `torch.nn.functional.scaled_dot_product_attention` on fp16 (or bf16) tensors in
PyTorch's (batch, heads, seq, head_dim) layout, with the FlashAttention-2 backend and the cuDNN
backend forced in turn (`torch.nn.attention.sdpa_kernel`). Timing: warm-up, then every rep
flushes L2 (writes a 256 MiB buffer), records CUDA events around one call, and the median is
reported. TFLOP/s counts 4·B·H·Nq·Nkv·d, halved for causal.

Usage: sdpa_bench.py [--dtype f16|bf16] [--reps 30] [--shapes B,H,N,D,causal;... |
                     --from-jsonl attention.jsonl] [--out FILE] [--print-shapes]
Without --shapes: the sweep `rustile attention bench` runs by default, in the same order:
N = 512 … 16384 with B·N = 16384 tokens of H = 16 heads, d 64/128, causal and not; then
B·H = 1, 4, 16, 64, 132, 256 at N = 4096, d = 128 (H = 16 where B·H is a multiple of 16, else 1).
`--from-jsonl`: the shapes of rustile's `attention.jsonl` (`rustile attention bench --out DIR`),
so both sweep exactly the same list; `rustile attention bench` also prints its `--shapes` string.
`--print-shapes`: print the shapes as `--shapes` takes them and exit (no GPU, no PyTorch).
Output: one JSON object per line (also written to --out).
"""

import argparse
import json
import sys

ANCHOR_N = (512, 1024, 2048, 4096, 8192, 16384)
BH = (1, 4, 16, 64, 132, 256)


def default_shapes():
    out = []
    for d in (64, 128):
        for n in ANCHOR_N:
            b = max(1, 16384 // n)
            for causal in (False, True):
                out.append((b, 16, n, d, causal))
    for bh in BH:
        h = 16 if bh % 16 == 0 else 1
        for causal in (False, True):
            out.append((bh // h, h, 4096, 128, causal))
    return unique(out)


def unique(shapes):
    seen, out = set(), []
    for s in shapes:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def parse_shapes(s):
    out = []
    for item in s.split(";"):
        if not item.strip():
            continue
        b, h, n, d, c = item.split(",")
        c = c.strip().lower()
        if c not in ("0", "1", "true", "false", "causal", "none"):
            raise SystemExit(f"bad causal value {c!r} in {item!r}")
        out.append((int(b), int(h), int(n), int(d), c in ("1", "true", "causal")))
    return out


def shapes_from_jsonl(path):
    out = []
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            out.append((r["b"], r["h"], r["n"], r["d"], bool(r["causal"])))
    return unique(out)


def shapes_arg(shapes):
    return ";".join(f"{b},{h},{n},{d},{int(c)}" for (b, h, n, d, c) in shapes)


def time_backend(backend, q, k, v, causal, reps, flush):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

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
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--shapes", default=None)
    src.add_argument("--from-jsonl", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--print-shapes", action="store_true")
    a = ap.parse_args()
    if a.shapes:
        shapes = parse_shapes(a.shapes)
    elif a.from_jsonl:
        shapes = shapes_from_jsonl(a.from_jsonl)
    else:
        shapes = default_shapes()
    if a.print_shapes:
        print(shapes_arg(shapes))
        return 0
    import torch
    from torch.nn.attention import SDPBackend

    dt = torch.float16 if a.dtype == "f16" else torch.bfloat16
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
