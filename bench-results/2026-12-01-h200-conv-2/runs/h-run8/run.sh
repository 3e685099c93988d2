#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
gunzip -f bin/*.gz 2>/dev/null; chmod +x bin/*
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/bin/rustile
O=$OUT/h; mkdir -p $O
L=l4.b1.conv2,l4.b0.conv2,l2.b1.conv2,l3.b1.conv2
for v in wgmma_n64 wgmma wgmma_n256; do for s in 1 2 3 4 5 6 8; do
  timeout 30 $R conv bench --types f16 --batch 32 --layers $L --reps 15 --seed 7$s --variants $v --splits $s --no-baseline 2>&1 | grep "conv/" | awk -F'|' -v s=$s '{printf "%s|%s|%s\n",$2,$4,$6}' >> $O/sweep.txt
done; done
sort $O/sweep.txt | uniq
