#!/usr/bin/env bash
# Session 17, call 2: rows_any with clamped source pointers and a whole-k-tile copy path
# (24 copies in ~75 instructions per k-tile, was ~230), two k-groups per block (rows_any) against
# one (rows_any_kg1).
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; T=$PWD/bin/test-gpu; S=$PWD/bin/test-skinny; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 150 $T --ignored --test-threads=1 dispatcher > $O/tests.log 2>&1; echo "rc=$?" >> $O/tests.log ) &
( timeout 150 $S --ignored --test-threads=1 > $O/skinny.log 2>&1; echo "rc=$?" >> $O/skinny.log ) &
( timeout 150 $R fuzz --family gemm --cases 300 --seed 29 > $O/fuzz.log 2>&1; echo "rc=$?" >> $O/fuzz.log ) &
wait; echo "tests+fuzz: ${SECONDS}s"; grep -E "^test |test result" $O/tests.log $O/skinny.log; tail -2 $O/fuzz.log
for rep in 1 2; do
( timeout 120 $R bench gemm --sizes 777x1234x555,1000,1024,768 --variants rows_any,rows_any_kg1,kgroup_ring --out $O/small$rep ) > $O/small$rep.log 2>&1
echo "== small $rep"; grep -E "^\|" $O/small$rep.log | cut -d'|' -f2-7
done
echo "bench: ${SECONDS}s"
san() { local tool=$1; shift; ( timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool.log 2>&1; echo "rc=$?" >> $O/san-$tool.log ) & }
for t in memcheck racecheck initcheck synccheck; do san $t $T --ignored --test-threads=1 one_wave_tile; done
wait; echo "sanitizers: ${SECONDS}s"; for f in $O/san-*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) $(tail -1 $f)"; done
for kn in sgemm_rows_any_f32 sgemm_rows_any_kg1_f32; do
( timeout 100 ncu --clock-control none --section WarpStateStats --section SchedulerStats --metrics gpu__time_duration.sum,smsp__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second -k $kn --launch-skip 3 --launch-count 1 $R bench gemm --sizes 777x1234x555 --variants rows_any,rows_any_kg1 --out $O/ncu > $O/ncu-$kn.log 2>&1 )
grep -E '^  [a-z_]|gpu__time|pct|registers|Stall|Issue|inst_executed|per_second|Warp Cycles|Eligible|Active Warps|No Eligible' $O/ncu-$kn.log | head -30
done
echo "total: ${SECONDS}s"
