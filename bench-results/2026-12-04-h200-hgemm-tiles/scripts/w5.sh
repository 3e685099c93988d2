#!/usr/bin/env bash
# Session 12, call B: validation of every wgmma_ws tile (quick set), the 64-row tiles on the
# skinny-M shapes, wgmma_ws's tile group at 4096³/8192³, the SGEMM variants on its failing shapes.
cd "$(dirname "$0")"
for z in bin/rustile.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/b; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
( time timeout 330 $R validate hgemm --quick ) > $O/validate.log 2>&1
tail -4 $O/validate.log | head -2
H="$R hgemm bench --types f16 --b bn,bt --timing interleaved --reps 30"
sw() { local tag=$1; shift; ( timeout 100 $H "$@" --results $O/sw-$tag ) > $O/sw-$tag.log 2>&1; }
san() { local tool=$1 name=$2; shift 2; ( timeout 240 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
sw m64 --rows 64 --width 256 --sizes 16x16384x16384,64x8192x8192
sw m64c2 --rows 64 --width 256 --cut 2 --sizes 16x16384x16384,64x8192x8192
sw m64c4 --rows 64 --width 256 --cut 4 --sizes 64x8192x8192
sw m64n128 --rows 64 --width 128 --sizes 16x16384x16384,64x8192x8192
sw m64n128c2 --rows 64 --width 128 --cut 2 --sizes 64x8192x8192
sw small --width 64 --reps 100 --sizes 512,1024
for g in 4 8 32; do sw g$g --width 256 --group $g --sizes 4096,8192; done
wait
( timeout 150 $R bench gemm --sizes 777x1234x555,1531,2999x3001x2997,256,512 --variants warptile,tile_128x64,kgroup_ring,kgroup_ring_kg1,double_buffer,double_buffer_async --out $O/sgemm ) > $O/sgemm.log 2>&1
for f in $O/sw-*.log; do grep -E "^\| f16" $f | cut -d'|' -f3-5,8,10,11,12,13; grep -iE "^error|Error" $f | head -3; done > $O/sweep.txt
tar czf $OUT/b.tgz -C $OUT b
cat $O/sweep.txt; grep -E "^\|" $O/sgemm.log | cut -d'|' -f2-4,7; grep -iE "fail|mismatch" $O/validate.log | head
