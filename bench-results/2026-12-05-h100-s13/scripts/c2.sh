#!/usr/bin/env bash
# Session 13, call 2: the issue-16 tensor-core shapes through the default (the model's tile),
# forced 64-row tiles and tile groups, the SGEMM variants on the failing shapes; conv ladder
# steps not timed before (mma.sync, naive f32) and the f32 ladder vs cuDNN.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; O=$OUT/b; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
SECONDS=0
H="$R hgemm bench --timing interleaved --reps 30"
( timeout 200 $H --types f16,bf16 --b bn,bt --sizes 16x16384x16384,64x8192x8192,12288x32x12288,8192x8192x16,8192x8192x64,512,1024,2048,4096 --results $O/auto ) > $O/auto.log 2>&1
echo "auto: ${SECONDS}s"
sw() { local tag=$1; shift; ( timeout 60 $H --types f16 --b bn,bt "$@" --results $O/sw-$tag ) > $O/sw-$tag.log 2>&1; }
sw m64 --rows 64 --width 256 --sizes 16x16384x16384,64x8192x8192
sw m64n128 --rows 64 --width 128 --sizes 16x16384x16384,64x8192x8192
sw n64 --rows 128 --width 64 --sizes 16x16384x16384,64x8192x8192,512,1024
sw n128c2 --rows 128 --width 128 --cut 2 --sizes 64x8192x8192
for g in 4 16; do sw g$g --rows 128 --width 256 --group $g --sizes 4096,8192; done
sw g8 --rows 128 --width 256 --sizes 4096,8192
echo "sweeps: ${SECONDS}s"
( timeout 100 $R bench gemm --sizes 777x1234x555,1531,2999x3001x2997,256,512 --variants warptile,tile_128x64,kgroup_ring,kgroup_ring_kg1,blocktile_2d,double_buffer_async --out $O/sgemm ) > $O/sgemm.log 2>&1
echo "sgemm: ${SECONDS}s"
( timeout 60 $R conv bench --types f16,bf16 --variants mma,mma_n64,wgmma_pp --layers 3x3 --out $O/conv-mma ) > $O/conv-mma.log 2>&1
( timeout 90 $R conv bench --types f32 --variants naive,smem,regblock,kmajor --layers 3x3 --out $O/conv-f32-nchw ) > $O/conv-f32-nchw.log 2>&1
( timeout 60 $R conv bench --types f32 --f32-nhwc --variants naive,smem,regblock --layers 3x3 --out $O/conv-f32-nhwc ) > $O/conv-f32-nhwc.log 2>&1
echo "conv: ${SECONDS}s"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
for f in $O/auto.log $O/sw-*.log; do echo "== $f"; grep -E "^\| (f16|bf16)" $f | cut -d'|' -f2-6,8-12; grep -iE "error" $f | head -3; done > $O/summary.txt
grep -E "^\|" $O/sgemm.log | cut -d'|' -f2-4,6 >> $O/summary.txt
tar czf $OUT/b.tgz -C $OUT b
cat $O/summary.txt | head -150
