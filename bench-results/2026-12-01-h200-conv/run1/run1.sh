#!/usr/bin/env bash
# Run 1 (2026-12-01 19:12 UTC), on the device from the staged rustile binary (.gpu/rustile.gz).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gzip -dc .gpu/rustile.gz > /tmp/r && chmod +x /tmp/r
o=$OUT
date > $o/log.txt
timeout 40 /tmp/r conv validate --seed 11 2>&1 | tail -15 >> $o/log.txt
echo "== dispatcher f16 b32 vs cudnn" >> $o/log.txt
timeout 100 /tmp/r conv bench --types f16 --batch 32 --reps 10 --seed 11 --out $o 2>&1 | tail -30 >> $o/log.txt
echo "== widths" >> $o/log.txt
timeout 60 /tmp/r conv bench --types f16 --batch 32 --variants wgmma_n64,wgmma,wgmma_n256 --no-baseline --reps 8 --warmup 2 --seed 11 2>&1 | grep '^|' >> $o/log.txt
echo "== direct stores, 1x1" >> $o/log.txt
timeout 30 /tmp/r conv bench --types f16 --batch 32 --direct-stores --no-baseline --layers conv1,conv3,down --reps 8 --seed 11 2>&1 | grep '^|' >> $o/log.txt
echo "== f32" >> $o/log.txt
timeout 50 /tmp/r conv bench --types f32 --batch 32 --variants smem,regblock --layers l1.b0.conv2,l2.b1.conv2,l3.b1.conv2,l4.b1.conv2 --reps 5 --warmup 1 --seed 11 2>&1 | tail -12 >> $o/log.txt
date >> $o/log.txt
