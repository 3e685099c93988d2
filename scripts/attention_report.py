#!/usr/bin/env python3
"""Merges `rustile attention bench --out DIR` (DIR/attention.jsonl) with `scripts/sdpa_bench.py`'s
JSON lines on the same shapes into one markdown table with ratios, checks the acceptance bars, and
draws a chart (SVG, standard library only; PNG too with --png where matplotlib is installed).

Rows join on (b, h, n, d, causal, dtype). Ratios are times: `× flash` = flash ms / rustile ms
(> 1: rustile is faster). Every TFLOP/s column uses rustile's FLOP count for the shape
(`Shape::flops`: 4·B·H·N²·d, the causal pairs exactly), so the columns compare like the ratios.

Acceptance bars, read on the anchor shapes (B = 16384 / N, H = 16; the `anchor` field):
  1. the sm_90a kernel (the best row with `sm90a`) ≥ 1.0× flash at every N ≥ 1024;
  2. the sm_90a kernel ≥ 0.85× cuDNN at d = 128, N ≥ 4096, non-causal;
  3. `mma` (sm_80) ≥ 0.8× flash at d = 128, N = 4096.
A bar with no rows to read says NO DATA (say, no sm_90a kernel ran).

usage: scripts/attention_report.py RUSTILE.jsonl SDPA.jsonl [--md OUT.md] [--svg OUT.svg]
                                   [--png OUT.png] [--strict]
--strict: exit 1 unless every bar holds.
"""
import argparse
import json
import sys

KEY = ("b", "h", "n", "d", "causal", "dtype")


def load(path):
    rows = []
    for i, line in enumerate(open(path)):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise SystemExit(f"{path}:{i + 1}: not JSON: {e}")
    return rows


def key(r):
    return tuple(bool(r[k]) if k == "causal" else r[k] for k in KEY)


def merge(ours, theirs):
    """Each rustile row with `flash_ms`, `cudnn_ms` (or None) and the ratios."""
    base = {key(r): r for r in theirs}
    out = []
    for r in ours:
        m = dict(r)
        t = base.get(key(r), {})
        for lib in ("flash", "cudnn"):
            ms = t.get(lib + "_ms")
            m[lib + "_ms"] = ms
            m[lib + "_error"] = t.get(lib + "_error")
            m[lib + "_tflops"] = r["flops"] / (ms * 1e-3) / 1e12 if ms else None
            m["x_" + lib] = ms / r["median_ms"] if ms and r["median_ms"] > 0 else None
        out.append(m)
    return out


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def table(rows):
    lines = [
        "| dtype | B | H | N | d | mask | kernel | TFLOP/s | flash | cuDNN | × flash | × cuDNN |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dtype']} | {r['b']} | {r['h']} | {r['n']} | {r['d']} | "
            f"{'causal' if r['causal'] else 'none'} | {r['kernel']} | {r['tflops']:.1f} | "
            f"{fmt(r['flash_tflops'], '.1f')} | {fmt(r['cudnn_tflops'], '.1f')} | "
            f"{fmt(r['x_flash'], '.3f')} | {fmt(r['x_cudnn'], '.3f')} |"
        )
    errors = sorted({(lib, r[lib + "_error"]) for r in rows for lib in ("flash", "cudnn") if r.get(lib + "_error")})
    if errors:
        lines.append("")
        lines.extend(f"- {lib} failed on some shapes: {e}" for lib, e in errors)
    return "\n".join(lines)


def best_per_shape(rows, pick):
    """Per shape, the fastest of the rows `pick` accepts."""
    best = {}
    for r in rows:
        if pick(r) and (key(r) not in best or r["median_ms"] < best[key(r)]["median_ms"]):
            best[key(r)] = r
    return list(best.values())


BARS = (
    ("sm_90a kernel ≥ 1.0× flash at every anchor N ≥ 1024", "x_flash", 1.0,
     lambda r: r.get("sm90a"), lambda r: r["n"] >= 1024),
    ("sm_90a kernel ≥ 0.85× cuDNN at d = 128, N ≥ 4096, non-causal", "x_cudnn", 0.85,
     lambda r: r.get("sm90a"), lambda r: r["d"] == 128 and r["n"] >= 4096 and not r["causal"]),
    ("mma (sm_80) ≥ 0.8× flash at d = 128, N = 4096", "x_flash", 0.8,
     lambda r: r["variant"] == "mma", lambda r: r["d"] == 128 and r["n"] == 4096),
)


def bars(rows):
    """[(name, verdict, detail)]: PASS / FAIL / NO DATA per bar."""
    out = []
    for name, ratio, bar, kernel, where in BARS:
        sel = [r for r in best_per_shape(rows, kernel) if r.get("anchor") and where(r)]
        missing = [r for r in sel if r[ratio] is None]
        have = [r for r in sel if r[ratio] is not None]
        if not have:
            out.append((name, "NO DATA", "no rows to read" if not sel else "the baseline did not run"))
            continue
        worst = min(have, key=lambda r: r[ratio])
        verdict = "PASS" if worst[ratio] >= bar and not missing else "FAIL"
        detail = (f"worst {worst[ratio]:.3f}× ({worst['kernel']} {worst['dtype']} N={worst['n']} d={worst['d']}"
                  f"{' causal' if worst['causal'] else ''}) over {len(have)} shapes")
        if missing:
            detail += f"; {len(missing)} shapes without a baseline"
        out.append((name, verdict, detail))
    return out


def panels(rows):
    """Chart panels: (title, x label, [(x, [rows at x])]) for the anchors per (d, mask), then B·H."""
    out = []
    for d in sorted({r["d"] for r in rows if r.get("anchor")}):
        for c in (False, True):
            sel = [r for r in rows if r.get("anchor") and r["d"] == d and r["causal"] == c]
            if sel:
                xs = sorted({r["n"] for r in sel})
                out.append((f"d = {d}, {'causal' if c else 'no mask'} (B·N = 16384, H = 16)", "N",
                            [(x, [r for r in sel if r["n"] == x]) for x in xs]))
    for c in (False, True):
        sel = [r for r in rows if r["n"] == 4096 and r["d"] == 128 and r["causal"] == c]
        bhs = sorted({r["b"] * r["h"] for r in sel})
        if len(bhs) > 1:
            out.append((f"N = 4096, d = 128, {'causal' if c else 'no mask'}: B·H sweep", "B·H",
                        [(x, [r for r in sel if r["b"] * r["h"] == x]) for x in bhs]))
    return out


def series(rows):
    names = []
    for r in rows:
        if r["variant"] not in names:
            names.append(r["variant"])
    return names + ["flash", "cuDNN"]


COLORS = ("#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974", "#64b5cd")


def value(rs, s):
    """TFLOP/s of series `s` among the rows `rs` of one x (the best row for a rustile variant)."""
    if s in ("flash", "cuDNN"):
        v = [r[("flash" if s == "flash" else "cudnn") + "_tflops"] for r in rs]
    else:
        v = [r["tflops"] for r in rs if r["variant"] == s]
    v = [x for x in v if x is not None]
    return max(v) if v else None


def svg(rows, title):
    ps = panels(rows)
    names = series(rows)
    colors = {s: COLORS[i % len(COLORS)] for i, s in enumerate(n for n in names if n not in ("flash", "cuDNN"))}
    colors.update({"flash": "#999999", "cuDNN": "#555555"})
    cols = 2
    PW, PH, top = 520, 220, 50
    W = 50 + cols * (PW + 30)
    H = top + ((len(ps) + cols - 1) // cols) * (PH + 70) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    lx = 60
    for s in names:
        out.append(f'<rect x="{lx}" y="30" width="12" height="10" fill="{colors[s]}"/><text x="{lx + 16}" y="39">{s}</text>')
        lx += 30 + 7 * len(s)
    for i, (ptitle, xlabel, groups) in enumerate(ps):
        x0 = 50 + (i % cols) * (PW + 30)
        y0 = top + 20 + (i // cols) * (PH + 70)
        vals = [value(rs, s) for _, rs in groups for s in names]
        ymax = max([v for v in vals if v is not None] + [1.0])
        ymax = 100.0 * (int(ymax / 100.0) + 1)
        out.append(f'<text x="{x0}" y="{y0 - 6}" font-size="12" font-weight="bold">{ptitle}</text>')
        for t in range(0, int(ymax) + 1, max(100, int(ymax / 500) * 100)):
            y = y0 + PH * (1 - t / ymax)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PW}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{t}</text>')
        slot = PW / max(1, len(groups))
        bw = slot / (len(names) + 1)
        for gi, (x, rs) in enumerate(groups):
            gx = x0 + gi * slot + bw / 2
            for si, s in enumerate(names):
                v = value(rs, s)
                if v is None:
                    continue
                h = PH * min(v, ymax) / ymax
                out.append(f'<rect x="{gx + si * bw:.1f}" y="{y0 + PH - h:.1f}" width="{bw * 0.9:.1f}" '
                           f'height="{h:.1f}" fill="{colors[s]}"><title>{s} {v:.1f}</title></rect>')
            out.append(f'<text x="{gx + slot / 2 - bw / 2:.1f}" y="{y0 + PH + 14}" text-anchor="middle">{x}</text>')
        out.append(f'<text x="{x0 + PW / 2}" y="{y0 + PH + 30}" text-anchor="middle" fill="#555">{xlabel}; TFLOP/s</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def png(rows, title, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no {path} (the SVG needs none)", file=sys.stderr)
        return False
    ps = panels(rows)
    names = series(rows)
    cols = 2
    fig, axes = plt.subplots((len(ps) + cols - 1) // cols, cols, figsize=(12, 3.2 * ((len(ps) + 1) // 2)), squeeze=False)
    for ax, (ptitle, xlabel, groups) in zip(axes.flat, ps):
        w = 0.8 / len(names)
        for si, s in enumerate(names):
            xs = [gi + si * w for gi, (_, rs) in enumerate(groups) if value(rs, s) is not None]
            ys = [value(rs, s) for _, rs in groups if value(rs, s) is not None]
            ax.bar(xs, ys, w, label=s)
        ax.set_xticks([gi + 0.4 - w / 2 for gi in range(len(groups))], [str(x) for x, _ in groups])
        ax.set_title(ptitle, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("TFLOP/s")
    for ax in list(axes.flat)[len(ps):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(names), fontsize=9, bbox_to_anchor=(0.5, 0.965))
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=120)
    return True


def report(ours, theirs):
    rows = merge(ours, theirs)
    verdicts = bars(rows)
    device = next((r.get("device") for r in ours if r.get("device")), "the GPU")
    title = f"rustile attention forward vs PyTorch SDPA (flash, cuDNN) on {device}"
    md = [f"# {title}", "", table(rows), "", "## Acceptance bars (anchor shapes)", ""]
    md += [f"- **{v}** {name}: {detail}" for name, v, detail in verdicts]
    md += ["", "× = baseline ms / rustile ms; TFLOP/s from rustile's FLOP count for every column."]
    return rows, verdicts, title, "\n".join(md) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rustile")
    ap.add_argument("sdpa")
    ap.add_argument("--md")
    ap.add_argument("--svg")
    ap.add_argument("--png")
    ap.add_argument("--strict", action="store_true")
    a = ap.parse_args(argv)
    rows, verdicts, title, md = report(load(a.rustile), load(a.sdpa))
    print(md, end="")
    if a.md:
        open(a.md, "w").write(md)
    if a.svg:
        open(a.svg, "w").write(svg(rows, title))
    if a.png:
        png(rows, title, a.png)
    if a.strict and any(v != "PASS" for _, v, _ in verdicts):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
