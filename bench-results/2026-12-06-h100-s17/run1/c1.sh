#!/usr/bin/env bash
# Session 17, call 1: the one-wave 64 × 128 any-pitch kernel (gemm/rows_any) and the
# dispatcher's rows_any rule. Staged as .gpu/ (bin/*.xz, COMMIT, this script).
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
( timeout 150 $R fuzz --family gemm --cases 300 --seed 23 > $O/fuzz.log 2>&1; echo "rc=$?" >> $O/fuzz.log ) &
wait; echo "tests+fuzz: ${SECONDS}s"; grep -E "^test |test result" $O/tests.log $O/skinny.log; tail -2 $O/fuzz.log
( timeout 120 $R bench gemm --sizes 777x1234x555,1000,768,1024,900x1100x700 --variants rows_any,small_tile,kgroup_ring --out $O/small ) > $O/small.log 2>&1
echo "== small"; grep -E "^\|" $O/small.log | cut -d'|' -f2-7
( timeout 150 $R bench gemm --sizes 1531,2999x3001x2997,2048,4096 --variants rows_any --out $O/big ) > $O/big.log 2>&1
echo "== big"; grep -E "^\|" $O/big.log | cut -d'|' -f2-7
echo "bench: ${SECONDS}s"
san() { local tool=$1; shift; ( timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool.log 2>&1; echo "rc=$?" >> $O/san-$tool.log ) & }
for t in memcheck racecheck initcheck synccheck; do san $t $T --ignored --test-threads=1 one_wave_tile; done
wait; echo "sanitizers: ${SECONDS}s"; for f in $O/san-*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) $(tail -1 $f)"; done
( timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__issue_active.avg.pct_of_peak_sustained_active -k regex:rows_any --launch-skip 3 --launch-count 1 $R bench gemm --sizes 777x1234x555 --variants rows_any --out $O/ncu > $O/ncu.log 2>&1 )
grep -E '^  [a-z_]|gpu__time|pct|registers' $O/ncu.log | head -16
echo "total: ${SECONDS}s"
