#!/usr/bin/env bash
# Session 16, call 7: the fix-up launch with three 64-bit divisions per thread (was two plus one per part) and four runs per thread.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; T=$PWD/bin/test-gpu; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 120 $T --ignored --test-threads=1 dispatcher > $O/tests.log 2>&1; echo "rc=$?" >> $O/tests.log ) &
( timeout 120 $R fuzz --family gemm --cases 300 --seed 16 > $O/fuzz.log 2>&1; echo "rc=$?" >> $O/fuzz.log ) &
wait; echo "tests+fuzz: ${SECONDS}s"; grep -E "^test |test result" $O/tests.log; tail -2 $O/fuzz.log
S=777x1234x555,1531,2999x3001x2997,1000,768,1536,2176,2048
( timeout 90 $R bench gemm --sizes $S --variants small_tile --out $O/sk ) > $O/sk.log 2>&1
echo "== plan"; grep -E "^\|" $O/sk.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6
for c in 132; do
  ( RUSTILE_SGEMM_STREAM_K=$c timeout 40 $R bench gemm --sizes 777x1234x555,1000 --variants small_tile --out $O/f$c ) > $O/f$c.log 2>&1
  echo "== ctas $c"; grep -E "^\|" $O/f$c.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6
done
echo "bench: ${SECONDS}s"
san() { local tool=$1 name=$2; shift 2; ( timeout 100 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
san memcheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san racecheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san initcheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san synccheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
wait; echo "sanitizers: ${SECONDS}s"; for f in $O/san-*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) $(tail -1 $f)"; done
( RUSTILE_SGEMM_STREAM_K=132 timeout 100 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --launch-skip 44 --launch-count 8 $R bench gemm --sizes 777x1234x555 --variants small_tile --out $O/ncu > $O/ncu.log 2>&1 )
grep -E '^  [a-z_]|gpu__time' $O/ncu.log | grep -v small_tile | head -16
( timeout 100 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -k regex:'stream_k|pad' --launch-skip 6 --launch-count 6 $R bench gemm --sizes 1531 --variants small_tile --out $O/ncu1531 > $O/ncu1531.log 2>&1 )
grep -E '^  [a-z_]|gpu__time' $O/ncu1531.log | head -16
echo "total: ${SECONDS}s"
