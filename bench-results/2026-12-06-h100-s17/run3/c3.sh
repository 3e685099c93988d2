#!/usr/bin/env bash
# Session 17, call 3: (a) ping-pong consumers for the tensor-core GEMM (wgmma_pp: each consumer
# warpgroup a whole 128 × 128 tile, one's epilogue under the other's wgmmas; the experiment
# switch RUSTILE_HGEMM_PINGPONG=1 maps the forced 128 × 128 tile to it): validated, then at
# 4096³ / 8192³ interleaved against cuBLAS beside the default 128 × 256 cooperative tile and the
# cooperative 128 × 128; (b) where the default tile's warps wait at 4096³ (ncu SourceCounters);
# (c) where the SGEMM dispatcher's rows_any floor should sit (rows_any vs the kernels run now).
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( RUSTILE_HGEMM_PINGPONG=1 timeout 200 $R hgemm validate --quick --seed 17 > $O/validate-pp.log 2>&1; echo "rc=$?" >> $O/validate-pp.log )
fin; echo "validate: ${SECONDS}s"; grep -ciE "wgmma_pp" $O/validate-pp.log; grep -iE "fail|mismatch|error" $O/validate-pp.log | head -5; tail -3 $O/validate-pp.log
H="$R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --reps 30 --warmup 5"
for sz in 4096 8192; do
( timeout 150 $H --sizes $sz --results $O/h$sz-wide ) > $O/h$sz-wide.log 2>&1
( RUSTILE_HGEMM_PINGPONG=1 timeout 150 $H --sizes $sz --rows 128 --width 128 --results $O/h$sz-pp ) > $O/h$sz-pp.log 2>&1
( timeout 150 $H --sizes $sz --rows 128 --width 128 --results $O/h$sz-coop128 ) > $O/h$sz-coop128.log 2>&1
for f in wide pp coop128; do echo "== $sz $f"; grep -E "^\|" $O/h$sz-$f.log | grep -v -- "---" | cut -d'|' -f2-9; done
done
fin; echo "hgemm bench: ${SECONDS}s"
S=512,640,704,768,832,896,960,700x900x600,600x800x2048,512x768x4096,384x1536x1024,999x640x777
( timeout 200 $R bench gemm --sizes $S --variants rows_any,kgroup_ring,small_tile --out $O/sweep ) > $O/sweep.log 2>&1
echo "== sgemm sweep"; grep -E "^\|" $O/sweep.log | cut -d'|' -f2-7 | grep -v -- "---"
fin; echo "sweep: ${SECONDS}s"
for k in hgemm_wgmma_ws hgemm_wgmma_pp; do
pp=0; [[ $k == *pp ]] && pp=1; extra=""; [[ $pp == 1 ]] && extra="--rows 128 --width 128"
( RUSTILE_HGEMM_PINGPONG=$pp timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum -k regex:$k --launch-skip 2 --launch-count 1 -o $O/$k $R hgemm bench --sizes 4096 --types f16 --b bn --reps 4 --warmup 2 --timing interleaved $extra --results $O/r-$k > $O/ncu-$k.txt 2>&1 )
( timeout 60 ncu -i $O/$k.ncu-rep --page source --csv --print-source sass > $O/$k-source.csv 2> $O/$k-source.err )
( timeout 60 ncu -i $O/$k.ncu-rep --page details > $O/$k-details.txt 2>&1 )
grep -E "gpu__time|hmma|inst_executed|Warp Cycles|Eligible|No Eligible" $O/$k-details.txt | head -8; wc -c $O/$k-source.csv; tail -2 $O/$k-source.err
rm -f $O/$k.ncu-rep
done
echo "total: ${SECONDS}s"
