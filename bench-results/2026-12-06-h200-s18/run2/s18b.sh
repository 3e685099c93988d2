#!/usr/bin/env bash
# Session 18, call 2: the SGEMM dispatcher's new rows_any/small_tile boundary (sweep + the GPU
# test pinning it); the clustered pair's launch (ncu LaunchStats: grid, cluster, time vs the
# wide tile); sanitizers on wgmma_pp, wgmma_pair (racecheck) and rows_any / small_tile (memcheck).
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 40 bin/test-skinny --ignored --test-threads 1 ) > $O/test-skinny.log 2>&1; echo "test-skinny rc=$? ${SECONDS}s"; grep -E "test result|FAILED|panicked" $O/test-skinny.log | head -5
S=1100x1100x64,1100x1100x512,1100x1100x2048,1152x1152x1152,1300x1300x700,1400x1400x1400,1200x1300x96,1024x1024x64
( timeout 45 $R bench gemm --sizes $S --variants rows_any,small_tile --out $O/rule ) > $O/rule.log 2>&1
echo "== rule"; grep -E "^\|" $O/rule.log | cut -d'|' -f2-7 | grep -v -- "---"; fin; echo "rule: ${SECONDS}s"
[[ $SECONDS -lt 70 ]] && for k in pair; do
pr=0; [[ $k == pair ]] && pr=1
( RUSTILE_HGEMM_PAIR=$pr timeout 30 ncu --clock-control none --section LaunchStats --section Occupancy --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum -k regex:hgemm_wgmma_$k --launch-skip 2 --launch-count 1 $R hgemm bench --sizes 4096 --types f16 --b bn --reps 3 --warmup 1 --timing interleaved --results $O/n-$k ) > $O/ncu-$k.txt 2>&1
grep -E "gpu__time|hmma|lts__t_bytes|Grid Size|Cluster Size|Cluster Scheduling|Max Active Clusters|Waves Per SM" $O/ncu-$k.txt | head -12
done
fin; echo "ncu: ${SECONDS}s"
[[ $SECONDS -lt 100 ]] && ( RUSTILE_HGEMM_PINGPONG=1 timeout 25 compute-sanitizer --tool racecheck --error-exitcode 9 $R hgemm bench --sizes 1000,4100x1100x200 --types f16 --b bn,bt --rows 128 --width 128 --reps 1 --warmup 0 --timing interleaved ) > $O/racecheck-pp.log 2>&1; echo "racecheck pp rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|wgmma" $O/racecheck-pp.log | head -6
[[ $SECONDS -lt 120 ]] && ( RUSTILE_HGEMM_PAIR=1 timeout 25 compute-sanitizer --tool racecheck --error-exitcode 9 $R hgemm bench --sizes 1000,1100 --types f16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/racecheck-pair.log 2>&1; echo "racecheck pair rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|wgmma" $O/racecheck-pair.log | head -6
fin
[[ $SECONDS -lt 130 ]] && ( timeout 25 compute-sanitizer --tool memcheck --error-exitcode 9 $R bench gemm --sizes 777x1234x555,1100x1100x64,999x640x777 --variants rows_any,small_tile ) > $O/memcheck-gemm.log 2>&1; echo "memcheck gemm rc=$?"; grep -E "ERROR SUMMARY" $O/memcheck-gemm.log | head -3
echo "total: ${SECONDS}s"
