#!/usr/bin/env python3
"""Renders the SGEMM ladder (TFLOP/s per variant at the given shapes, cuBLAS as a line) from a
`rustile bench gemm` JSON file into an SVG. Standard library only.

usage: scripts/plot-gemm-ladder.py RESULTS.json OUT.svg [SHAPE ...]
"""
import json
import sys

path, out = sys.argv[1], sys.argv[2]
shapes = sys.argv[3:] or ["4096x4096x4096", "8192x8192x8192"]
data = json.load(open(path))
# Result files carry {"schema", "meta", "rows"} (notes/results.md); older ones were a bare list.
rows = data["rows"] if isinstance(data, dict) else data
order = []
for r in rows:
    v = r["variant"]
    if v != "cuBLAS" and not v.startswith("dispatch") and v not in order:
        order.append(v)
colors = ["#4c72b0", "#dd8452"]
W, H, left, bottom, top = 900, 420, 60, 90, 30
plot_w, plot_h = W - left - 20, H - bottom - top
ymax = 60.0
bar_w = plot_w / len(order) / (len(shapes) + 1)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">']
svg.append(f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">rustile SGEMM ladder on the H200 (TFLOP/s, f32, TF32 off)</text>')
for t in range(0, int(ymax) + 1, 10):
    y = top + plot_h * (1 - t / ymax)
    svg.append(f'<line x1="{left}" y1="{y}" x2="{W-20}" y2="{y}" stroke="#ddd"/>')
    svg.append(f'<text x="{left-6}" y="{y+4}" text-anchor="end">{t}</text>')
for si, shape in enumerate(shapes):
    by = {r["variant"]: r for r in rows if r["shape"] == shape}
    for vi, v in enumerate(order):
        if v not in by:
            continue
        t = by[v]["tflops"]
        x = left + vi * plot_w / len(order) + si * bar_w + bar_w / 2
        h = plot_h * min(t, ymax) / ymax
        svg.append(f'<rect x="{x:.1f}" y="{top+plot_h-h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{colors[si % 2]}"><title>{v} {shape}: {t:.1f}</title></rect>')
    if "cuBLAS" in by:
        y = top + plot_h * (1 - by["cuBLAS"]["tflops"] / ymax)
        svg.append(f'<line x1="{left}" y1="{y:.1f}" x2="{W-20}" y2="{y:.1f}" stroke="{colors[si % 2]}" stroke-dasharray="6,4"/>')
        svg.append(f'<text x="{W-22}" y="{y-4:.1f}" text-anchor="end" fill="{colors[si % 2]}">cuBLAS {shape}: {by["cuBLAS"]["tflops"]:.1f}</text>')
for vi, v in enumerate(order):
    x = left + (vi + 0.5) * plot_w / len(order)
    svg.append(f'<text x="{x:.1f}" y="{top+plot_h+14}" text-anchor="end" transform="rotate(-35 {x:.1f} {top+plot_h+14})">{v}</text>')
for si, shape in enumerate(shapes):
    svg.append(f'<rect x="{left+10+si*200}" y="{H-18}" width="12" height="12" fill="{colors[si % 2]}"/><text x="{left+28+si*200}" y="{H-8}">{shape}</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg))
