#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
gunzip -f bin/*.gz; chmod +x bin/*
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/bin/rustile
O=$OUT/g; mkdir -p $O
L=l1.b0.conv2,l2.b1.conv2,l3.b1.conv2,l4.b1.conv2,l1.b0.conv1,l2.b0.down,l4.b0.conv2,l3.b0.conv1
for i in 1 2; do
  RUSTILE_CUDNN_SHRINK_WS=1 timeout 60 $R conv bench --types f16 --batch 32 --layers $L --reps 20 --seed 5$i > $O/shrink$i.log 2>&1
  timeout 60 $R conv bench --types f16,bf16 --batch 32 --layers $L --reps 20 --seed 6$i --out $O/keep$i > $O/keep$i.log 2>&1
done
for f in $O/shrink1.log $O/keep1.log $O/shrink2.log $O/keep2.log; do echo "== $f"; grep -h "conv/" $f | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n",$2,$4,$6,$7,$8,$9}' | sed 's/cudnn fused //'; done
tar czf $OUT/g.tgz -C $OUT g
