#!/usr/bin/env python3
"""Cross-checks rustile's attention against PyTorch on the same inputs.

`rustile attention dump --out DIR …` writes one directory per case under DIR, each with
meta.json and q.npy, k.npy, v.npy (the inputs,
float32 arrays holding exactly the f16/bf16 values, (batch, seq, heads, head_dim)), o.npy
(rustile's output, float32 of the f16/bf16 values) and lse.npy ((batch, heads_q, seq_q)). This
script recomputes the attention with `torch.nn.functional.scaled_dot_product_attention` on the
GPU in the input dtype, and in float64 as the reference (with the log-sum-exp), and compares.

PyTorch's `is_causal` aligns the mask to the top-left when seq_q ≠ seq_kv; rustile (like
FlashAttention ≥ 2.1) aligns it to the bottom-right, so causal cases pass an explicit boolean
mask `j ≤ i + seq_kv − seq_q`. Rows that see no key: rustile gives O = 0 and LSE = −inf; PyTorch
gives NaN there, so those rows are compared against the definition, not against PyTorch.

Pass: no NaN, rows that see no key exactly O = 0 / LSE = −inf, rustile's max error against the
float64 reference within the dtype bound (the same bound as rustile's own validation), LSE
within 1e-3 relative. PyTorch's own error against the same reference is printed beside it.
Exit 1 on failure. Usage:
sdpa_check.py DIR [DIR ...]
where each DIR is a case directory (it holds meta.json) or holds case directories (the --out of
`rustile attention dump`).
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

BOUND = {"f16": 2e-3, "bf16": 1.6e-2}  # × max|V|, absolute part of the bound on O


def check(d):
    meta = json.load(open(f"{d}/meta.json"))
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[meta["dtype"]]
    q, k, v, o, lse = (np.load(f"{d}/{x}.npy") for x in ("q", "k", "v", "o", "lse"))
    b, nq, hq, dh = q.shape
    nkv, hkv = k.shape[1], k.shape[2]
    causal, scale = bool(meta["causal"]), float(meta["scale"])
    dev = "cuda"
    tq = torch.from_numpy(q).to(dev).permute(0, 2, 1, 3)  # (b, h, n, d)
    tk = torch.from_numpy(k).to(dev).permute(0, 2, 1, 3)
    tv = torch.from_numpy(v).to(dev).permute(0, 2, 1, 3)
    g = hq // hkv
    tk = tk.repeat_interleave(g, dim=1)
    tv = tv.repeat_interleave(g, dim=1)
    mask = None
    if causal:
        i = torch.arange(nq, device=dev)[:, None]
        j = torch.arange(nkv, device=dev)[None, :]
        mask = j <= i + (nkv - nq)
    seen = mask.any(dim=1) if mask is not None else torch.ones(nq, dtype=torch.bool, device=dev)
    # float64 reference, with the log-sum-exp.
    s = torch.matmul(tq.double(), tk.double().transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    ref_lse = torch.logsumexp(s, dim=-1)  # (b, h, nq)
    p = torch.softmax(s, dim=-1)
    ref = torch.matmul(p, tv.double())
    ref = torch.where(seen[None, None, :, None], ref, torch.zeros_like(ref))
    ref_lse = torch.where(seen[None, None, :], ref_lse, torch.full_like(ref_lse, float("-inf")))
    # PyTorch in the input dtype.
    with torch.no_grad():
        pt = F.scaled_dot_product_attention(tq.to(dt), tk.to(dt), tv.to(dt), attn_mask=mask, scale=scale)
    pt = pt.double()
    ro = torch.from_numpy(o).to(dev).permute(0, 2, 1, 3).double()
    rl = torch.from_numpy(lse).to(dev).double()
    vmax = float(tv.abs().max())
    rows = seen[None, None, :, None].expand_as(ref)
    err_r = (ro - ref).abs()
    err_p = (pt - ref).abs()
    nan_r = bool(torch.isnan(ro).any() or torch.isnan(rl).any())
    e_r = float(err_r[rows].max()) if rows.any() else 0.0
    e_p = float(err_p[rows].max()) if rows.any() else 0.0
    masked_ok = bool((ro[~rows] == 0).all()) and bool(torch.isneginf(rl[~seen[None, None, :].expand_as(rl)]).all())
    lrows = seen[None, None, :].expand_as(rl)
    e_l = float((rl - ref_lse).abs()[lrows].max()) if lrows.any() else 0.0
    bound = BOUND[meta["dtype"]] * max(vmax, 1e-30)
    ok = (not nan_r) and masked_ok and e_r <= bound and e_l <= 1e-3 * max(1.0, float(ref_lse[lrows].abs().max()) if lrows.any() else 1.0)
    res = {"case": d, "shape": [b, nq, nkv, hq, hkv, dh], "causal": causal, "dtype": meta["dtype"],
           "kernel": meta.get("kernel"), "rustile_max_err": e_r, "torch_max_err": e_p, "bound": bound,
           "lse_max_err": e_l, "masked_rows_ok": masked_ok, "nan": nan_r, "ok": ok}
    print(json.dumps(res), flush=True)
    return ok


def case_dirs(args):
    out = []
    for d in args:
        if os.path.exists(os.path.join(d, "meta.json")):
            out.append(d)
            continue
        subs = sorted(
            os.path.join(d, s) for s in os.listdir(d) if os.path.exists(os.path.join(d, s, "meta.json"))
        )
        if not subs:
            raise SystemExit(f"{d}: no meta.json in it or in its subdirectories")
        out.extend(subs)
    return out


def main():
    dirs = case_dirs(sys.argv[1:])
    if not dirs:
        raise SystemExit("usage: sdpa_check.py DIR [DIR ...]")
    ok = all([check(d) for d in dirs])
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
