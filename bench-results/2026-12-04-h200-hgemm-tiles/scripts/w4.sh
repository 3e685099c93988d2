#!/usr/bin/env bash
# Session 12, call A: validation of the narrow / cut wgmma_ws tiles, a forced-tile sweep on the
# issue-16 shapes they are for, then the model's pick on every issue-16 tensor-core shape.
cd "$(dirname "$0")"
for z in bin/rustile.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/bin/rustile; O=$OUT/a; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
( time timeout 200 $R validate hgemm --quick ) > $O/validate.log 2>&1
tail -3 $O/validate.log
grep -iE "fail|mismatch" $O/validate.log | head -20
H="$R hgemm bench --types f16 --b bn,bt --timing interleaved --reps 30"
S5="512,1024,16x16384x16384,64x8192x8192,12288x32x12288"
sw() { local tag=$1; shift; ( timeout 120 $H "$@" --results $O/sw-$tag ) > $O/sw-$tag.log 2>&1; }
sw w256 --width 256 --sizes $S5,2048
sw w128 --width 128 --sizes $S5,2048,4096
sw w64 --width 64 --sizes $S5,2048
sw w128c2 --width 128 --cut 2 --sizes 512,1024,64x8192x8192
sw w128c4 --width 128 --cut 4 --sizes 512
sw w128c8 --width 128 --cut 8 --sizes 512
sw w64c2 --width 64 --cut 2 --sizes 512
sw w64c4 --width 64 --cut 4 --sizes 512
for f in $O/sw-*.log; do grep -E "^\| f16" $f | cut -d'|' -f3-5,8,10,11; grep -iE "^error|Error" $f | head -3; done > $O/sweep.txt
S=4095,3001x3003x2999,16x16384x16384,64x8192x8192,12288x32x12288,8192x8192x16,8192x8192x64,512,1024,2048,4096,8192
( time timeout 200 $R hgemm bench --sizes $S --types f16,bf16 --b bn,bt --timing interleaved --results $O/auto ) > $O/auto.log 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
tar czf $OUT/a.tgz -C $OUT a
cat $O/sweep.txt; grep -E "^\| (f16|bf16)" $O/auto.log | cut -d'|' -f2-5,8,10,11; tail -3 $O/auto.log | grep -iE "error|real"
