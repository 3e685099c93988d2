#!/usr/bin/env python3
"""rustile against PyTorch on the same .npy files: `rustile run FAMILY[/VARIANT] --in … --out …`.

For each case this draws random inputs with torch, writes them as .npy (f32 '<f4', f16 '<f2',
bf16 as '<u2' bit patterns with `--dtype bf16`), runs the staged rustile binary on them, reads
its output and compares it, and torch's own result on the same inputs, with a float64 reference
computed from the very same (rounded) inputs.

Pass: no NaN; every element of rustile's output within its own bound:
  gemm (f32):   |got − ref| ≤ (k + 2)·u32·(|α|·|A|·|B| + |β·C|)_ij
  hgemm:        |got − ref| ≤ (k + 2)·u32·(|A|·|B| + |bias|)_ij + 2·u_out·|ref_ij|  (f32
                accumulation, one rounding to the output type; u_out 2^-11 f16, 2^-8 bf16)
  copy/strided/transpose: bit-exact.
The same bounds as rustile's own validation (tests/npy_run.rs). torch's max error against the same
reference is printed beside rustile's.

Usage (on the GPU machine, after scripts/stage-gpu):
  python3 scripts/torch_check.py [--rustile .gpu/bin/rustile] [--out DIR] [--sim]
Writes DIR/torch_check.log (the table) and DIR/*.npy; exits 1 if any case fails or a family
cannot be run.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch

U32 = 2.0 ** -24
U_OUT = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def save(path, t):
    """t as .npy the way rustile reads it: bf16 as its uint16 bit patterns."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        np.save(path, t.view(torch.int16).numpy().view(np.uint16))
    else:
        np.save(path, t.numpy())


def load(path, dtype):
    a = np.load(path)
    if dtype == "bf16":
        assert a.dtype == np.uint16, a.dtype
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


class Runner:
    def __init__(self, binary, out, sim):
        self.binary, self.out, self.sim = binary, out, sim

    def path(self, name):
        return os.path.join(self.out, name)

    def run(self, kernel, inputs, extra=(), bf16=False):
        y = self.path("y.npy")
        if os.path.exists(y):
            os.remove(y)
        cmd = [self.binary, "run", kernel, "--in", *inputs, "--out", y, *extra]
        if bf16:
            cmd += ["--dtype", "bf16"]
        if self.sim:
            cmd.append("--sim")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
        return y


def gemm_case(rn, m, n, k, alpha, beta, variant):
    g = torch.Generator().manual_seed(m * 7919 + n * 31 + k)
    a = torch.rand(m, k, generator=g) * 2 - 1
    b = torch.rand(k, n, generator=g) * 2 - 1
    c = torch.rand(m, n, generator=g) * 2 - 1
    for name, t in (("a", a), ("b", b), ("c", c)):
        save(rn.path(f"{name}.npy"), t)
    extra = ["--alpha", str(alpha), "--beta", str(beta)]
    if beta != 0.0:
        extra += ["--c", rn.path("c.npy")]
    y = rn.run(variant, [rn.path("a.npy"), rn.path("b.npy")], extra)
    got = load(y, "f32").double()
    a64, b64, c64 = a.double(), b.double(), c.double()
    ref = alpha * a64 @ b64 + beta * c64
    scale = abs(alpha) * a64.abs() @ b64.abs() + (beta * c64).abs()
    bound = (k + 2) * U32 * scale
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    pt = (alpha * a.to(dev) @ b.to(dev) + beta * c.to(dev)).cpu().double()
    return judge(f"{variant} f32 {m}x{n}x{k} α={alpha} β={beta}", got, ref, bound, pt)


def hgemm_case(rn, m, n, k, ty, bias, relu, variant):
    g = torch.Generator().manual_seed(m * 131 + n * 17 + k + (1 if ty == "bf16" else 0))
    a = (torch.rand(m, k, generator=g) * 2 - 1).to(TORCH[ty])
    b = (torch.rand(k, n, generator=g) * 2 - 1).to(TORCH[ty])
    bv = torch.rand(n, generator=g) * 2 - 1
    save(rn.path("a.npy"), a)
    save(rn.path("b.npy"), b)
    save(rn.path("bias.npy"), bv)
    extra = (["--bias", rn.path("bias.npy")] if bias else []) + (["--relu"] if relu else [])
    y = rn.run(variant, [rn.path("a.npy"), rn.path("b.npy")], extra, bf16=(ty == "bf16"))
    got = load(y, ty).double()
    a64, b64 = a.double(), b.double()
    ref = a64 @ b64 + (bv.double() if bias else 0.0)
    scale = a64.abs() @ b64.abs() + (bv.double().abs() if bias else 0.0)
    if relu:
        ref = ref.clamp(min=0.0)
    bound = (k + 2) * U32 * scale + 2 * U_OUT[ty] * ref.abs()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    pt = (a.to(dev) @ b.to(dev)).float() + (bv.to(dev) if bias else 0.0)
    if relu:
        pt = pt.clamp(min=0.0)
    pt = pt.to(TORCH[ty]).cpu().double()
    what = f"{variant} {ty} {m}x{n}x{k}" + (" +bias" if bias else "") + (" relu" if relu else "")
    return judge(what, got, ref, bound, pt)


def memory_case(rn, family, shape, ty, stride=None):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    x = (torch.rand(*shape, generator=g) * 2 - 1).to(TORCH[ty])
    save(rn.path("x.npy"), x)
    extra = ["--stride", str(stride)] if stride else []
    y = rn.run(family, [rn.path("x.npy")], extra, bf16=(ty == "bf16"))
    got = load(y, ty)
    want = {"copy": lambda: x, "transpose": lambda: x.t().contiguous(),
            "strided": lambda: x[::stride]}[family.split("/")[0]]()
    bits = lambda t: t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)
    same = got.shape == want.shape and bool((bits(got) == bits(want)).all())
    return {"case": f"{family} {ty} {tuple(shape)}" + (f" stride={stride}" if stride else ""),
            "rustile": 0.0 if same else float("inf"), "torch": 0.0, "bound": 0.0, "ok": same}


def judge(what, got, ref, bound, pt):
    if got.shape != ref.shape:
        return {"case": what, "rustile": float("inf"), "torch": float("nan"), "bound": 0.0,
                "ok": False, "why": f"shape {tuple(got.shape)} vs {tuple(ref.shape)}"}
    err = (got - ref).abs()
    nan = bool(torch.isnan(got).any())
    ok = (not nan) and bool((err <= bound).all())
    worst = float((err / bound.clamp(min=1e-300)).max())
    return {"case": what, "rustile": float(err.max()), "torch": float((pt - ref).abs().max()),
            "bound": float(bound.max()), "worst_ratio": worst, "ok": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rustile", default=".gpu/bin/rustile")
    ap.add_argument("--out", default=os.environ.get("OUT", ".gpu/out") + "/torch-check")
    ap.add_argument("--sim", action="store_true", help="run rustile in its simulator (small shapes)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rn = Runner(args.rustile, args.out, args.sim)
    big = not args.sim
    cases = []
    for v in ["gemm", "gemm/naive", "gemm/warptile"] + (["gemm/double_buffer"] if big else []):
        cases.append(lambda v=v: gemm_case(rn, 129, 67, 45, 1.0, 0.0, v))
    cases.append(lambda: gemm_case(rn, 70, 71, 50, 0.5, -1.5, "gemm"))
    if big:
        cases.append(lambda: gemm_case(rn, 1000, 999, 1001, 1.0, 0.0, "gemm"))
        cases.append(lambda: gemm_case(rn, 2048, 2048, 2048, 1.0, 0.0, "gemm"))
    hv = ["hgemm", "hgemm/mma", "hgemm/mma_pipeline"] + (["hgemm/wgmma_ws"] if big else [])
    for ty in ["f16", "bf16"]:
        for v in hv:
            cases.append(lambda ty=ty, v=v: hgemm_case(rn, 128, 64, 96, ty, True, True, v))
        cases.append(lambda ty=ty: hgemm_case(rn, 77, 45, 33, ty, False, False, "hgemm/mma"))
        if big:
            cases.append(lambda ty=ty: hgemm_case(rn, 1024, 2048, 512, ty, True, True, "hgemm"))
    for ty in ["f32", "f16"]:
        cases.append(lambda ty=ty: memory_case(rn, "copy", [3, 1001], ty))
        cases.append(lambda ty=ty: memory_case(rn, "transpose", [257, 129], ty))
        cases.append(lambda ty=ty: memory_case(rn, "strided", [9999], ty, stride=7))
        if big:
            cases.append(lambda ty=ty: memory_case(rn, "transpose", [2049, 4095], ty))
    rows = []
    for c in cases:
        try:
            rows.append(c())
        except RuntimeError as e:
            rows.append({"case": "(run failed)", "rustile": float("inf"), "torch": float("nan"),
                         "bound": 0.0, "ok": False, "why": str(e)})
    # attention and conv have no `rustile run` handler: their own .npy round trip instead,
    # `rustile <family> dump` (rustile's inputs and outputs as .npy) checked against PyTorch by
    # scripts/sdpa_check.py / scripts/conv_torch.py on the same files (GPU only).
    here = os.path.dirname(os.path.abspath(__file__))
    checks = {"attention": [os.path.join(here, "sdpa_check.py")],
              "conv": [os.path.join(here, "conv_torch.py"), "check"]}
    skipped = []
    for fam in ["attention", "conv"]:
        r = subprocess.run([args.rustile, "run", fam, "--in", rn.path("x.npy"), "--out",
                            rn.path("y.npy")] + (["--sim"] if args.sim else []),
                           capture_output=True, text=True)
        if "no `rustile run` support" not in r.stderr:
            continue
        if args.sim:
            skipped.append(fam)
            continue
        d = os.path.join(args.out, f"{fam}-dump")
        dump = subprocess.run([args.rustile, fam, "dump", "--out", d], capture_output=True, text=True)
        chk = subprocess.run([sys.executable] + checks[fam] + [d], capture_output=True, text=True)
        with open(os.path.join(args.out, f"{fam}-check.log"), "w") as f:
            f.write(dump.stdout + dump.stderr + chk.stdout + chk.stderr)
        last = (chk.stdout.strip().splitlines() or ["(no output)"])[-1]
        rows.append({"case": f"{fam}: `rustile {fam} dump` + {os.path.basename(checks[fam][0])}",
                     "rustile": float("nan"), "torch": float("nan"), "bound": float("nan"),
                     "ok": dump.returncode == 0 and chk.returncode == 0,
                     "why": f"dump rc={dump.returncode}, check rc={chk.returncode}: {last[:90]}"})
    if skipped:
        print(f"not checked with --sim (GPU only): {', '.join(skipped)}")
    lines = [f"{'case':58} {'rustile max err':>16} {'torch max err':>14} {'bound':>10}  result"]
    for r in rows:
        lines.append(f"{r['case']:58} {r['rustile']:16.3e} {r['torch']:14.3e} {r['bound']:10.2e}  "
                     f"{'PASS' if r['ok'] else 'FAIL'}" + (f"  ({r['why']})" if "why" in r else ""))
    failed = sum(not r["ok"] for r in rows)
    lines.append(f"{len(rows) - failed} of {len(rows)} passed: {'PASS' if failed == 0 else 'FAIL'}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "torch_check.log"), "w") as f:
        f.write(text + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
