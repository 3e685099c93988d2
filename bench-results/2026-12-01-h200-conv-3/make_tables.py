#!/usr/bin/env python3
"""Builds tables.md from this session's final run (final/) and, for the strict baseline, the
fastest cuDNN seen in any run of this session or the previous one (../2026-12-01-h200-conv-2:
the in-process fused call of runs 4-7 and its final run, and its PyTorch run). Also the
session-2 rate of the same layer (before). Run from this directory: python3 make_tables.py"""
import json, re, glob, collections

PREV = '../2026-12-01-h200-conv-2/'

def rows_of(path):
    out = []
    for line in open(path):
        if '| conv/' not in line:
            continue
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        layer, prob, kernel, tf = c[0], c[1], c[2], float(c[4])
        dt = re.search(r' (f16|bf16|f32) ', prob).group(1)
        n = int(re.match(r'n(\d+)', prob).group(1))
        base = float(c[6]) if len(c) > 6 and c[6] not in ('—', '') else None
        out.append(dict(layer=layer, prob=prob, kernel=kernel, tf=tf, dt=dt, n=n, fused=base))
    return out

def first(rows):
    seen = {}
    for r in rows:
        seen.setdefault((r['layer'], r['dt']), r)
    return seen

final = first(rows_of('final/bench-b32.log'))
before = first(rows_of(PREV + 'final/bench-b32.log'))
best = collections.defaultdict(float)
logs = ['final/bench-b32.log', PREV + 'final/bench-b32.log', PREV + 'runs/d-run4/bench-b32.log',
        PREV + 'runs/e-run5/b32.log'] + glob.glob(PREV + 'runs/g-run7/keep*.log') + glob.glob(PREV + 'runs/g-run7/shrink*.log')
for f in logs:
    for r in rows_of(f):
        if r['n'] == 32 and r['fused']:
            best[(r['layer'], r['dt'])] = max(best[(r['layer'], r['dt'])], r['fused'])
conv_alone = collections.defaultdict(float)
torch_now = {}
for f in ['final/torch.json', PREV + 'final/torch.json']:
    for t in json.load(open(f))['rows']:
        key = (t['name'], t['dtype'], t['n'])
        conv_alone[key] = max(conv_alone[key], t['conv_tflops'])
        if f.startswith('final'):
            torch_now[key] = t

def kind(prob):
    if '1x1' in prob: return '1x1'
    if '3x3' in prob: return '3x3'
    return 'stem'

lines = []
summary = collections.Counter()
for dt in ['f16', 'bf16']:
    lines.append(f'\n### batch 32, {dt}\n')
    lines.append('| layer | shape | rustile kernel | rustile TFLOP/s | session 2 | cuDNN fused (this run) | fastest cuDNN fused seen | PyTorch relu(conv+b) (this run) | × | fastest PyTorch conv alone seen | strict × | bar |')
    lines.append('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    for (layer, d), r in final.items():
        if d != dt:
            continue
        t = torch_now[(layer, dt, 32)]
        ca = conv_alone[(layer, dt, 32)]
        b = best[(layer, dt)]
        k = kind(r['prob'])
        bar = {'3x3': 0.8, '1x1': 0.7}.get(k)
        strict = r['tf'] / max(b, ca)
        verdict = '—' if bar is None else ('holds' if strict >= bar else f'**fails** (< {bar})')
        if bar is not None:
            summary[(dt, k, strict >= bar)] += 1
        prev = before.get((layer, dt))
        shape = re.sub(r'^n32 | nhwc \+bias \+relu| d1| f16| bf16', '', r['prob'])
        lines.append(f"| {layer} | {shape} | {r['kernel'][5:]} | {r['tf']:.1f} | {prev['tf'] if prev else float('nan'):.1f} | {r['fused']:.1f} | {b:.1f} | {t['fused_tflops']:.1f} | {r['tf']/t['fused_tflops']:.2f} | {ca:.1f} | {strict:.2f} | {verdict} |")
lines.append('\n### Bars held (strict)\n')
lines.append('| dtype | 3×3 (≥ 0.8) | 1×1 (≥ 0.7) |')
lines.append('|---|---:|---:|')
for dt in ['f16', 'bf16']:
    h3, n3 = summary[(dt, '3x3', True)], summary[(dt, '3x3', True)] + summary[(dt, '3x3', False)]
    h1, n1 = summary[(dt, '1x1', True)], summary[(dt, '1x1', True)] + summary[(dt, '1x1', False)]
    lines.append(f'| {dt} | {h3} of {n3} | {h1} of {n1} |')
b1 = first(rows_of('final/bench-b1.log'))
for dt in ['f16', 'bf16']:
    lines.append(f'\n### batch 1, {dt}\n')
    lines.append('| layer | rustile kernel | rustile TFLOP/s | cuDNN fused | × | PyTorch relu(conv+b) | × | PyTorch conv alone | × |')
    lines.append('|---|---|---:|---:|---:|---:|---:|---:|---:|')
    for (layer, d), r in b1.items():
        if d != dt: continue
        t = torch_now[(layer, dt, 1)]
        lines.append(f"| {layer} | {r['kernel'][5:]} | {r['tf']:.1f} | {r['fused']:.1f} | {r['tf']/r['fused']:.2f} | {t['fused_tflops']:.1f} | {r['tf']/t['fused_tflops']:.2f} | {t['conv_tflops']:.1f} | {r['tf']/t['conv_tflops']:.2f} |")
open('tables.md', 'w').write('\n'.join(lines).lstrip() + '\n')
