#!/usr/bin/env python3
"""PyTorch baselines and cross-check for rustile's fused conv2d + bias + ReLU.

Modes:

  conv_torch.py bench [--batch 32 1] [--dtype f16 bf16] [--no-f32] [--layers NAME,...]
                      [--reps 30] [--warmup 5] [--out FILE.json] [--md FILE.md]
      Times F.relu(F.conv2d(x, w, b, stride, padding, dilation)) and F.conv2d(x, w) alone on
      the ResNet-50 layers (the table below, the same as host/families/conv/shapes.rs) at each
      batch, in f16 and bf16 with channels_last tensors, plus f32 NCHW (contiguous) on the four
      stride-1 3x3 layers. torch.backends.cudnn.benchmark = True; TF32 off. Timing: warm-up
      (which also runs cudnn.benchmark's search), then each rep writes a 256 MiB buffer (L2
      flush), records CUDA events around one call; the median of the reps is reported.
      TFLOP/s counts 2*N*K*P*Q*C*R*S. Prints a markdown table and a whole-network line
      (sum over layers of count x median); writes JSON with --out.

  conv_torch.py check ROOT [ROOT ...] [--device cuda|cpu]
      For every case directory under each ROOT (a directory holding meta.json, as
      `rustile::families::conv::dump` writes: x.npy NHWC or NCHW, w.npy KRSC or KCRS,
      bias.npy f32, y.npy the kernel's output, f16 as '<f2', bf16 as '<u2' bits), recomputes the
      op in float64 from the same rounded inputs and checks y element by element within
      rustile's bound (host/families/conv/reference.rs):
          |y - r| <= 2*u*|r| + tiny + A*s,   s = sum |x*w| + |bias|,
      A = 2^-16 for f16/bf16, gamma_L = L*u/(1 - L*u) with L = R*S*C + 1 for f32; NaN fails.
      PyTorch's own result in the dtype is checked against the same bound and printed beside
      (not a pass criterion). Prints ALL OK or the failures; exit 1 on any failure, 2 when no
      case is found.

  conv_torch.py --print-shapes
      Prints the ResNet-50 table as JSON (no GPU, no PyTorch): tests/conv_cudnn.rs compares it
      with shapes.rs.

Needs torch and numpy for bench and check; --help and --print-shapes need neither.
"""

import argparse
import json
import os
import sys

# The 23 distinct conv layers of ResNet-50 (torchvision v1.5: stride on the 3x3), in network
# order: (name, input hw, c, k, filter rs, stride, count in one forward pass); padding rs // 2.
# Keep in step with RESNET50 in host/families/conv/shapes.rs (tests/conv_cudnn.rs checks).
RESNET50 = [
    ("stem", 224, 3, 64, 7, 2, 1),
    ("l1.b0.conv1", 56, 64, 64, 1, 1, 1),
    ("l1.b0.conv2", 56, 64, 64, 3, 1, 3),
    ("l1.b0.conv3", 56, 64, 256, 1, 1, 4),
    ("l1.b1.conv1", 56, 256, 64, 1, 1, 2),
    ("l2.b0.conv1", 56, 256, 128, 1, 1, 1),
    ("l2.b0.conv2", 56, 128, 128, 3, 2, 1),
    ("l2.b0.conv3", 28, 128, 512, 1, 1, 4),
    ("l2.b0.down", 56, 256, 512, 1, 2, 1),
    ("l2.b1.conv1", 28, 512, 128, 1, 1, 3),
    ("l2.b1.conv2", 28, 128, 128, 3, 1, 3),
    ("l3.b0.conv1", 28, 512, 256, 1, 1, 1),
    ("l3.b0.conv2", 28, 256, 256, 3, 2, 1),
    ("l3.b0.conv3", 14, 256, 1024, 1, 1, 6),
    ("l3.b0.down", 28, 512, 1024, 1, 2, 1),
    ("l3.b1.conv1", 14, 1024, 256, 1, 1, 5),
    ("l3.b1.conv2", 14, 256, 256, 3, 1, 5),
    ("l4.b0.conv1", 14, 1024, 512, 1, 1, 1),
    ("l4.b0.conv2", 14, 512, 512, 3, 2, 1),
    ("l4.b0.conv3", 7, 512, 2048, 1, 1, 3),
    ("l4.b0.down", 14, 1024, 2048, 1, 2, 1),
    ("l4.b1.conv1", 7, 2048, 512, 1, 1, 2),
    ("l4.b1.conv2", 7, 512, 512, 3, 1, 2),
]
# The f32 study set (F32_STUDY in shapes.rs): the four stride-1 3x3 layers.
F32_STUDY = ("l1.b0.conv2", "l2.b1.conv2", "l3.b1.conv2", "l4.b1.conv2")

# Unit roundoff and smallest subnormal per dtype (rustile's elem.rs).
UNIT = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
TINY = {"f32": 2.0**-149, "f16": 2.0**-24, "bf16": 2.0**-133}


def shapes_json():
    keys = ("name", "hw", "c", "k", "rs", "stride", "count")
    return json.dumps([dict(zip(keys, row)) for row in RESNET50], separators=(",", ":"))


def out_hw(h, rs, stride, pad, dil=1):
    return (h + 2 * pad - dil * (rs - 1) - 1) // stride + 1


# ---------------------------------------------------------------------------------- bench


def torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]


def time_fn(torch, fn, reps, warmup, flush):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(reps):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in pairs)
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[0], times[-1]


def bench_cases(args):
    layers = [row for row in RESNET50 if not args.layers or row[0] in args.layers]
    cases = []
    for batch in args.batch:
        for dtype in args.dtype:
            cases += [(row, batch, dtype, "nhwc") for row in layers]
        if not args.no_f32:
            cases += [(row, batch, "f32", "nchw") for row in layers if row[0] in F32_STUDY]
    return cases


def bench(args):
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    info = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(0),
    }
    rows = []
    for (name, hw, c, k, rs, stride, count), n, dtype, layout in bench_cases(args):
        dt = torch_dtype(torch, dtype)
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        pad = rs // 2
        gen = torch.Generator(device=dev).manual_seed(1)

        def uniform(*shape):
            return (torch.rand(*shape, device=dev, generator=gen) * 2 - 1).to(dt)

        x = uniform(n, c, hw, hw).contiguous(memory_format=fmt)
        w = uniform(k, c, rs, rs).contiguous(memory_format=fmt)
        b = uniform(k)
        with torch.no_grad():
            fused = lambda: F.relu(F.conv2d(x, w, b, stride, pad, 1))  # noqa: E731
            conv = lambda: F.conv2d(x, w, None, stride, pad, 1)  # noqa: E731
            f_ms, f_min, f_max = time_fn(torch, fused, args.reps, args.warmup, flush)
            c_ms, _, _ = time_fn(torch, conv, args.reps, args.warmup, flush)
        p = out_hw(hw, rs, stride, pad)
        flops = 2.0 * n * k * p * p * c * rs * rs
        rows.append(
            {
                "name": name, "n": n, "h": hw, "w": hw, "c": c, "k": k, "r": rs, "s": rs,
                "stride": [stride, stride], "pad": [pad, pad], "dil": [1, 1],
                "dtype": dtype, "layout": layout, "p": p, "q": p, "count": count,
                "flops": flops, "reps": args.reps,
                "fused_ms": f_ms, "fused_min_ms": f_min, "fused_max_ms": f_max,
                "fused_tflops": flops / f_ms / 1e9,
                "conv_ms": c_ms, "conv_tflops": flops / c_ms / 1e9,
            }
        )
        r = rows[-1]
        print(
            f"{name:12} n{n:<3} {dtype:4} {layout}: relu(conv+b) {f_ms:8.4f} ms "
            f"{r['fused_tflops']:7.1f} TFLOP/s   conv {c_ms:8.4f} ms {r['conv_tflops']:7.1f}",
            file=sys.stderr,
        )
        del x, w, b
    md = markdown(rows, info)
    print(md)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md + "\n")
    if args.out:
        method = (
            "relu(conv2d(x, w, b)) and conv2d(x, w), channels_last for f16/bf16, contiguous "
            f"NCHW for f32; cudnn.benchmark=True, TF32 off; median of {args.reps} CUDA-event "
            f"reps after {args.warmup} warm-up, 256 MiB L2 flush before each; "
            "FLOPs 2*N*K*P*Q*C*R*S"
        )
        with open(args.out, "w") as f:
            json.dump({"info": info, "method": method, "rows": rows}, f, indent=1)
            f.write("\n")
    return 0


def markdown(rows, info):
    out = [
        f"PyTorch {info['torch']}, CUDA {info['cuda']}, cuDNN {info['cudnn']}, {info['gpu']}",
        "",
        "| layer | N | dtype | layout | HxW | C→K | RxS/stride | relu(conv+b) ms | TFLOP/s "
        "| conv ms | TFLOP/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r['name']} | {r['n']} | {r['dtype']} | {r['layout']} | {r['h']}x{r['w']} "
            f"| {r['c']}→{r['k']} | {r['r']}x{r['s']}/{r['stride'][0]} "
            f"| {r['fused_ms']:.4f} | {r['fused_tflops']:.1f} "
            f"| {r['conv_ms']:.4f} | {r['conv_tflops']:.1f} |"
        )
    totals = {}
    for r in rows:
        key = (r["n"], r["dtype"], r["layout"])
        ms, fl, layers = totals.get(key, (0.0, 0.0, 0))
        totals[key] = (ms + r["count"] * r["fused_ms"], fl + r["count"] * r["flops"], layers + 1)
    out.append("")
    for (n, dtype, layout), (ms, fl, layers) in totals.items():
        if layers == len(RESNET50):
            out.append(
                f"ResNet-50 convolutions, N={n} {dtype} {layout}: {ms:.3f} ms "
                f"({fl / ms / 1e9:.1f} TFLOP/s over the 53 convs)"
            )
    return "\n".join(out)


# ---------------------------------------------------------------------------------- check


def case_dirs(roots):
    found = []
    for root in roots:
        if os.path.isfile(os.path.join(root, "meta.json")):
            found.append(root)
            continue
        for d, _, files in sorted(os.walk(root)):
            if "meta.json" in files:
                found.append(d)
    return sorted(set(found))


def load(np, path, encoding):
    a = np.load(path)
    if encoding == "<u2":
        if a.dtype != np.uint16:
            raise ValueError(f"{path}: {a.dtype}, meta.json says bf16 bits ('<u2')")
        return (a.astype(np.uint32) << 16).view(np.float32)
    want = {"<f2": np.float16, "<f4": np.float32}[encoding]
    if a.dtype != want:
        raise ValueError(f"{path}: {a.dtype}, meta.json says {encoding}")
    return a


def to_nchw(torch, np, a, layout, dev):
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)).to(dev)
    return t.permute(0, 3, 1, 2) if layout in ("nhwc", "krsc") else t


def bound(meta, r, s):
    dt = meta["dtype"]
    out = 2 * UNIT[dt] * r.abs() + TINY[dt]
    if dt == "f32":
        l = meta["r"] * meta["s"] * meta["c"] + 1
        u = 2.0**-24
        return out + (l * u / (1 - l * u)) * s
    return out + 2.0**-16 * s


def check_case(torch, np, F, d, dev):
    meta = json.load(open(os.path.join(d, "meta.json")))
    enc = meta["encoding"]
    x = load(np, os.path.join(d, "x.npy"), enc)
    w = load(np, os.path.join(d, "w.npy"), enc)
    y = load(np, os.path.join(d, "y.npy"), enc)
    bias_path = os.path.join(d, "bias.npy")
    if meta["bias"] != os.path.exists(bias_path):
        raise ValueError(f"meta.json bias={meta['bias']} but bias.npy "
                         f"{'exists' if os.path.exists(bias_path) else 'is missing'}")
    n, h, wd, c, k, r, s, p, q = (meta[f] for f in ("n", "h", "w", "c", "k", "r", "s", "p", "q"))
    nhwc = meta["x_layout"] == "nhwc"
    want = {
        "x": (n, h, wd, c) if nhwc else (n, c, h, wd),
        "w": (k, r, s, c) if nhwc else (k, c, r, s),
        "y": (n, p, q, k) if nhwc else (n, k, p, q),
    }
    for name, a in (("x", x), ("w", w), ("y", y)):
        if tuple(a.shape) != want[name]:
            raise ValueError(f"{name}.npy has shape {a.shape}, meta.json says {want[name]}")
    tx = to_nchw(torch, np, x, meta["x_layout"], dev)
    tw = to_nchw(torch, np, w, meta["w_layout"], dev)
    ty = to_nchw(torch, np, y, meta["x_layout"], dev)
    tb = None
    if meta["bias"]:
        tb = torch.from_numpy(np.load(bias_path).astype(np.float64)).to(dev)
    conv = dict(stride=tuple(meta["stride"]), padding=tuple(meta["pad"]), dilation=tuple(meta["dil"]))
    with torch.no_grad():
        ref = F.conv2d(tx, tw, tb, **conv)
        scale = F.conv2d(tx.abs(), tw.abs(), tb.abs() if tb is not None else None, **conv)
        if meta["relu"]:
            ref = ref.clamp(min=0)
        tol = bound(meta, ref, scale)
        if tuple(ref.shape) != (n, k, p, q):
            raise ValueError(f"PyTorch's output {tuple(ref.shape)} is not (n, k, p, q) = {(n, k, p, q)}")
        err = (ty - ref).abs()
        bad = torch.isnan(ty) | (err > tol)
        ratio = float((err / tol).nan_to_num(float("inf")).max())
        # PyTorch in the dtype, for comparison (NaN where this device has no such conv).
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[meta["dtype"]]
        fmt = torch.channels_last if nhwc and dev == "cuda" else torch.contiguous_format
        try:
            px = tx.to(dt).contiguous(memory_format=fmt)
            pw = tw.to(dt).contiguous(memory_format=fmt)
            pb = tb.to(dt) if tb is not None else None
            pt = F.conv2d(px, pw, pb, **conv)
            if meta["relu"]:
                pt = F.relu(pt)
            pt_ratio = float(((pt.double() - ref).abs() / tol).nan_to_num(float("inf")).max())
        except RuntimeError:
            pt_ratio = float("nan")
    nbad = int(bad.sum())
    first = None
    if nbad:
        i = [int(v) for v in bad.nonzero()[0]]
        first = (f"y[n={i[0]}][k={i[1]}][p={i[2]}][q={i[3]}] = {float(ty[tuple(i)])}, float64 "
                 f"{float(ref[tuple(i)])} (bound {float(tol[tuple(i)]):.3e})")
    return meta, nbad, ratio, pt_ratio, first


def check(args):
    dirs = case_dirs(args.roots)
    if not dirs:
        print(f"no case directory (with meta.json) under {args.roots}", file=sys.stderr)
        return 2
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    failures = []
    for d in dirs:
        try:
            meta, nbad, ratio, pt_ratio, first = check_case(torch, np, F, d, dev)
        except (ValueError, KeyError, OSError) as e:
            failures.append(f"{d}: {e}")
            print(f"FAIL {d}: {e}")
            continue
        status = "ok  " if nbad == 0 else "FAIL"
        print(f"{status} {os.path.basename(d)}: {meta['kernel']} worst |err|/bound {ratio:.3f} "
              f"(PyTorch {meta['dtype']}: {pt_ratio:.3f})")
        if nbad:
            failures.append(f"{d}: {nbad} elements outside the bound; first {first}")
    if failures:
        print(f"\n{len(failures)} of {len(dirs)} cases FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print(f"\nALL OK ({len(dirs)} cases)")
    return 0


# ---------------------------------------------------------------------------------- main


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    ap.add_argument("--print-shapes", action="store_true",
                    help="print the ResNet-50 table as JSON and exit (no PyTorch)")
    sub = ap.add_subparsers(dest="mode")
    b = sub.add_parser("bench", help="time PyTorch on the ResNet-50 layers")
    b.add_argument("--batch", type=int, nargs="+", default=[32, 1])
    b.add_argument("--dtype", nargs="+", choices=("f16", "bf16"), default=["f16", "bf16"])
    b.add_argument("--no-f32", action="store_true", help="skip the f32 NCHW 3x3 layers")
    b.add_argument("--layers", type=lambda s: [x for x in s.split(",") if x],
                   help="only these layers (names from the table, comma-separated)")
    b.add_argument("--reps", type=int, default=30)
    b.add_argument("--warmup", type=int, default=5)
    b.add_argument("--out", help="write the rows as JSON here")
    b.add_argument("--md", help="write the markdown table here")
    c = sub.add_parser("check", help="cross-check rustile's .npy dumps against float64")
    c.add_argument("roots", nargs="+", help="case directories, or directories holding them")
    c.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda if available")
    args = ap.parse_args(argv)
    if args.print_shapes:
        print(shapes_json())
        return 0
    if args.mode == "bench":
        names = {row[0] for row in RESNET50}
        unknown = [x for x in (args.layers or []) if x not in names]
        if unknown:
            ap.error(f"unknown layers {unknown}; the table has {sorted(names)}")
        if args.reps < 1 or args.warmup < 0:
            ap.error("--reps must be >= 1 and --warmup >= 0")
        return bench(args)
    if args.mode == "check":
        return check(args)
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
