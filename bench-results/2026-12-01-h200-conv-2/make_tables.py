#!/usr/bin/env python3
"""Builds tables.md from the run logs here: the final run (final/) and the earlier runs
(runs/*/), for the README. Run from this directory: python3 make_tables.py"""
import json, re, glob, collections

def rows_of(path):
    out = []
    for line in open(path):
        if '| conv/' not in line:
            continue
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        layer, prob, kernel, ms, tf = c[0], c[1], c[2], float(c[3]), float(c[4])
        dt = re.search(r' (f16|bf16|f32) ', prob).group(1)
        n = int(re.match(r'n(\d+)', prob).group(1))
        base = float(c[6]) if len(c) > 6 and c[6] not in ('—', '') else None
        conv = tf / float(c[9]) if len(c) > 9 and c[9] not in ('—', '') else None
        out.append(dict(layer=layer, prob=prob, kernel=kernel, tf=tf, dt=dt, n=n, fused=base, conv=conv))
    return out

final = [r for r in rows_of('final/bench-b32.log')]
seen = {}
for r in final:
    seen.setdefault((r['layer'], r['dt']), r)
final = list(seen.values())
# cuDNN fused, every run that timed it (runs 4-7): the best seen per layer and dtype.
best = collections.defaultdict(float)
for f in ['final/bench-b32.log', 'runs/d-run4/bench-b32.log', 'runs/e-run5/b32.log'] + glob.glob('runs/g-run7/keep*.log') + glob.glob('runs/g-run7/shrink*.log'):
    for r in rows_of(f):
        if r['n'] == 32 and r['fused']:
            best[(r['layer'], r['dt'])] = max(best[(r['layer'], r['dt'])], r['fused'])
torch = json.load(open('final/torch.json'))['rows']
tq = {(t['name'], t['dtype'], t['n']): t for t in torch}

def kind(prob):
    if '1x1' in prob: return '1x1'
    if '3x3' in prob: return '3x3'
    return 'stem'

lines = []
for dt in ['f16', 'bf16']:
    lines.append(f'\n### batch 32, {dt}\n')
    lines.append('| layer | shape | rustile kernel | rustile TFLOP/s | cuDNN fused (this run) | × | cuDNN fused, best of runs 4–7 | × | PyTorch relu(conv+b) | × | PyTorch conv alone (cuDNN) | × | strict × | bar |')
    lines.append('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    for r in final:
        if r['dt'] != dt:
            continue
        t = tq.get((r['layer'], dt, 32))
        b = best[(r['layer'], dt)]
        k = kind(r['prob'])
        bar = {'3x3': 0.8, '1x1': 0.7}.get(k)
        ratio_best = r['tf'] / b if b else float('nan')
        # Strict: against the fastest cuDNN seen for this layer, the fused call in this
        # process (any run) or PyTorch's convolution alone (no bias, no ReLU).
        strict = r['tf'] / max(b, t['conv_tflops'])
        verdict = '—' if bar is None else ('holds' if strict >= bar else f'**fails** (< {bar})')
        shape = re.sub(r'^n32 | nhwc \+bias \+relu| d1| f16| bf16', '', r['prob'])
        lines.append(f"| {r['layer']} | {shape} | {r['kernel'][5:]} | {r['tf']:.1f} | {r['fused']:.1f} | {r['tf']/r['fused']:.2f} | {b:.1f} | {ratio_best:.2f} | {t['fused_tflops']:.1f} | {r['tf']/t['fused_tflops']:.2f} | {t['conv_tflops']:.1f} | {r['tf']/t['conv_tflops']:.2f} | {strict:.2f} | {verdict} |")
b1 = {}
for r in rows_of('final/bench-b1.log'):
    b1.setdefault((r['layer'], r['dt']), r)
for dt in ['f16', 'bf16']:
    lines.append(f'\n### batch 1, {dt}\n')
    lines.append('| layer | rustile kernel | rustile TFLOP/s | cuDNN fused | × | PyTorch relu(conv+b) | × | PyTorch conv alone | × |')
    lines.append('|---|---|---:|---:|---:|---:|---:|---:|---:|')
    for (layer, d), r in b1.items():
        if d != dt: continue
        t = tq.get((layer, dt, 1))
        lines.append(f"| {layer} | {r['kernel'][5:]} | {r['tf']:.1f} | {r['fused']:.1f} | {r['tf']/r['fused']:.2f} | {t['fused_tflops']:.1f} | {r['tf']/t['fused_tflops']:.2f} | {t['conv_tflops']:.1f} | {r['tf']/t['conv_tflops']:.2f} |")
open('tables.md', 'w').write('\n'.join(lines).lstrip() + '\n')
print('\n'.join(lines))
