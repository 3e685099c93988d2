#!/usr/bin/env python3
"""Renders a `rustile hgemm bench` markdown table into an SVG: TFLOP/s of rustile's kernel and of
cuBLAS per shape, one panel per input type, for one B layout. Standard library only.

usage: scripts/plot-hgemm.py BENCH.md OUT.svg [bn|bt]
"""
import sys

path, out = sys.argv[1], sys.argv[2]
layout = sys.argv[3] if len(sys.argv) > 3 else "bn"
rows = []
for line in open(path):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 9 or cells[0] in ("type", "---"):
        continue
    ty, b, shape, kernel, tf, cu, ratio = cells[:7]
    if b == layout:
        rows.append((ty, shape, kernel, float(tf), float(cu), float(ratio)))
types = [t for t in ("f16", "bf16") if any(r[0] == t for r in rows)]
shapes = []
for r in rows:
    if r[1] not in shapes:
        shapes.append(r[1])
W, H, left, bottom, top, gap = 1000, 300 * len(types) + 40, 60, 110, 40, 40
panel_h = (H - top - 20) / len(types) - bottom
ymax = 900.0
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">rustile tensor-core GEMM vs cuBLAS on the H200 '
       f'(TFLOP/s, f32 accumulation, B {"row-major" if layout == "bn" else "transposed"})</text>']
for pi, ty in enumerate(types):
    y0 = top + pi * (panel_h + bottom)
    svg.append(f'<text x="{left}" y="{y0 - 6}" font-size="12" font-weight="bold">{ty}</text>')
    for t in range(0, int(ymax) + 1, 100):
        y = y0 + panel_h * (1 - t / ymax)
        svg.append(f'<line x1="{left}" y1="{y:.1f}" x2="{W-20}" y2="{y:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{left-6}" y="{y+4:.1f}" text-anchor="end">{t}</text>')
    slot = (W - left - 20) / len(shapes)
    bw = slot / 3
    for si, shape in enumerate(shapes):
        r = next((r for r in rows if r[0] == ty and r[1] == shape), None)
        if r is None:
            continue
        x = left + si * slot + bw / 2
        for k, (val, color) in enumerate(((r[3], "#4c72b0"), (r[4], "#999999"))):
            h = panel_h * min(val, ymax) / ymax
            svg.append(f'<rect x="{x + k*bw:.1f}" y="{y0 + panel_h - h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{color}"/>')
        svg.append(f'<text x="{x + bw:.1f}" y="{y0 + panel_h - panel_h*max(r[3], r[4])/ymax - 4:.1f}" text-anchor="middle">{r[5]:.2f}×</text>')
        svg.append(f'<text x="{x + bw:.1f}" y="{y0 + panel_h + 14:.1f}" text-anchor="middle">{shape}</text>')
        svg.append(f'<text x="{x + bw:.1f}" y="{y0 + panel_h + 27:.1f}" text-anchor="middle" fill="#555">{r[2]}</text>')
ly = H - 18
svg.append(f'<rect x="{left}" y="{ly-9}" width="12" height="10" fill="#4c72b0"/><text x="{left+16}" y="{ly}">rustile (kernel the selection picks)</text>')
svg.append(f'<rect x="{left+260}" y="{ly-9}" width="12" height="10" fill="#999999"/><text x="{left+276}" y="{ly}">cuBLAS cublasGemmEx, same process; label: rustile / cuBLAS</text>')
svg.append('</svg>')
open(out, "w").write("\n".join(svg) + "\n")
