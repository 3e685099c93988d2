#!/usr/bin/env bash
# Session 16, call 2: forced stream-K grids at 777x1234x555 and per-kernel times under ncu (warm L2).
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
for c in 264 396 132; do
( RUSTILE_SGEMM_STREAM_K=$c timeout 40 $R bench gemm --sizes 777x1234x555 --variants small_tile --out $O/f$c ) > $O/f$c.log 2>&1
echo "== ctas $c"; grep -E "^\|" $O/f$c.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6
( RUSTILE_SGEMM_STREAM_K=$c timeout 100 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes.sum,lts__t_bytes.sum --launch-skip 44 --launch-count 8 $R bench gemm --sizes 777x1234x555 --variants small_tile --out $O/ncu > $O/ncu$c.log 2>&1 )
grep -E '^  [a-z_]|gpu__time|bytes' $O/ncu$c.log | head -40
done
tar czf $OUT/c.tgz -C $OUT c
