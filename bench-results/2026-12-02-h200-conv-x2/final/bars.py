"""Strict bars for the session-5 conv run: rustile (final/conv-b32) against the fastest
baseline seen per layer and dtype: ../../2026-12-01-h200-conv-3/tables.md's "fastest cuDNN
fused seen" and "fastest PyTorch conv alone seen" columns, and this run's in-process cuDNN
fused time if faster. Usage: python3 final/bars.py > final/bars.md"""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
strict = {}
dt = None
for l in open(os.path.join(here, '../../2026-12-01-h200-conv-3/tables.md')):
    if l.startswith('### batch 32, f16'): dt = 'f16'
    elif l.startswith('### batch 32, bf16'): dt = 'bf16'
    elif l.startswith('###'): dt = None
    c = [x.strip() for x in l.split('|')]
    if dt and len(c) > 12 and c[1][:1] in 'ls' and c[1] != 'layer':
        strict[(c[1], dt)] = (max(float(c[7]), float(c[10])), c[2])
# Another run's conv.json as the argument (session 8: ../../2026-12-03-h200-conv-cut/run4).
rows = json.load(open(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'conv-b32/conv.json')))
rows = rows['rows'] if isinstance(rows, dict) else rows
print('| layer | dtype | shape | rustile kernel | TFLOP/s | cuDNN fused (this run) | strict baseline | strict × | bar |')
print('|---|---|---|---|---:|---:|---:|---:|---|')
held = {}
for r in rows:
    key = (r['layer'], r['dtype'])
    if key not in strict: continue
    base, shape = strict[key]
    t = r['time']['median_ms'] if isinstance(r['time'], dict) else r['time']
    fused = [st['median_ms'] for name, st in (r.get('baselines') or []) if 'fused' in name]
    this = r['tflops'] * t / min(fused) if fused else 0.0
    base = max(base, this)
    x = r['tflops'] / base
    kind = '3x3' if '3x3' in shape else ('1x1' if '1x1' in shape else 'other')
    bar = {'3x3': 0.8, '1x1': 0.7}.get(kind)
    ok = '—' if bar is None else ('holds' if x >= bar else f'**fails** (< {bar})')
    if bar: held.setdefault((r['dtype'], kind), [0, 0]); held[(r['dtype'], kind)][1] += 1; held[(r['dtype'], kind)][0] += x >= bar
    print(f"| {r['layer']} | {r['dtype']} | {shape} | {r['kernel']} | {r['tflops']:.1f} | {this:.1f} | {base:.1f} | {x:.2f} | {ok} |")
print()
print('| dtype | 3×3 (≥ 0.8) | 1×1 (≥ 0.7) |\n|---|---:|---:|')
for d in ('f16', 'bf16'):
    a, b = held.get((d, '3x3'), [0, 0]), held.get((d, '1x1'), [0, 0])
    print(f'| {d} | {a[0]} of {a[1]} | {b[0]} of {b[1]} |')
