"""Conv bars from one conv.json, against that run's own in-process baselines only (cuDNN fused
and cuDNN conv alone, both timed interleaved with rustile in the same process): the faster
baseline's median, and — strict, for the bimodal cuDNN fused call — the faster baseline's p20.
rustile's own median is used on both. Usage: python3 bars_inproc.py conv.json > bars.md"""
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows['rows'] if isinstance(rows, dict) else rows
print('| layer | dtype | shape | rustile kernel | µs | TFLOP/s | best baseline median µs | × | best baseline p20 µs | strict × | bar |')
print('|---|---|---|---|---:|---:|---:|---:|---:|---:|---|')
held = {}
for r in rows:
    t = r['time']['median_ms'] if isinstance(r['time'], dict) else r['time']
    bl = r.get('baselines') or []
    if not bl: continue
    med = min(st['median_ms'] for _, st in bl)
    p20 = min(st['p20_ms'] for _, st in bl)
    p = r['problem']
    shape = f"{p['h']}x{p['w']} c{p['c']} k{p['k']} {p['r']}x{p['s']} s{p['stride'][0]} p{p['pad'][0]}"
    kind = {(3, 3): '3x3', (1, 1): '1x1'}.get((p['r'], p['s']), 'other')
    bar = {'3x3': 0.8, '1x1': 0.7}.get(kind)
    x, xs = med / t, p20 / t
    ok = '—' if bar is None else ('holds' if xs >= bar else ('holds (median only)' if x >= bar else f'**fails** (< {bar})'))
    if bar:
        h = held.setdefault((r['dtype'], kind), [0, 0, 0]); h[2] += 1; h[0] += xs >= bar; h[1] += x >= bar
    print(f"| {r['layer']} | {r['dtype']} | {shape} | {r['kernel']} | {t*1e3:.1f} | {r['tflops']:.1f} | {med*1e3:.1f} | {x:.2f} | {p20*1e3:.1f} | {xs:.2f} | {ok} |")
print()
print('| dtype | 3×3 (≥ 0.8) strict / median | 1×1 (≥ 0.7) strict / median |\n|---|---:|---:|')
for d in ('f16', 'bf16'):
    a, b = held.get((d, '3x3'), [0, 0, 0]), held.get((d, '1x1'), [0, 0, 0])
    print(f'| {d} | {a[0]} / {a[1]} of {a[2]} | {b[0]} / {b[1]} of {b[2]} |')
