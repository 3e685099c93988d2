#!/usr/bin/env python3
"""Which kernels cuDNN runs for a ResNet-50 layer, and how long each takes.

  cudnn_kernels.py [--batch 32] [--dtype f16] [--layers NAME,...] [--reps 10]

For each layer (the table in conv_torch.py): F.conv2d(x, w, b) then ReLU on channels_last
tensors with cudnn.benchmark=True (its search runs in the warm-up), then torch.profiler over
`reps` calls; prints every CUDA kernel the calls launched with its mean device time. The kernel
names carry cuDNN's tile shape, cluster shape and stage count (e.g. `..._tilesize128x128x64_
cluster1x2x1_...`), which is what notes/conv.md compares rustile's tiling against.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_torch import RESNET50, torch_dtype  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
    p.add_argument("--layers", default=None, help="comma-separated layer names (default: all)")
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    if a.reps < 1:
        p.error("--reps must be at least 1")
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    want = set(a.layers.split(",")) if a.layers else None
    dt = torch_dtype(torch, a.dtype)
    fmt = torch.channels_last if a.dtype != "f32" else torch.contiguous_format
    for name, hw, c, k, rs, stride, _ in RESNET50:
        if want and name not in want:
            continue
        x = (torch.rand(a.batch, c, hw, hw, device="cuda") * 2 - 1).to(dt).contiguous(memory_format=fmt)
        w = (torch.rand(k, c, rs, rs, device="cuda") * 2 - 1).to(dt).contiguous(memory_format=fmt)
        b = (torch.rand(k, device="cuda") * 2 - 1).to(dt)
        with torch.no_grad():
            f = lambda: F.relu(F.conv2d(x, w, b, stride, rs // 2))  # noqa: E731
            for _ in range(5):
                f()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(a.reps):
                    f()
                torch.cuda.synchronize()
        print(f"== {name} n{a.batch} {hw}x{hw} c{c} k{k} {rs}x{rs}/{stride} {a.dtype}")
        for ev in sorted(prof.key_averages(), key=lambda e: -e.device_time_total):
            if ev.device_time_total <= 0:
                continue
            print(f"   {ev.device_time_total / a.reps:9.2f} us/call  x{ev.count // a.reps:<2} {ev.key[:200]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
