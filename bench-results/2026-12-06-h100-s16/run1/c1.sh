#!/usr/bin/env bash
# Session 16, call 1: session 15's stream-K kernel (no epilogue) and the NT pipeline's zero-fill edge copies — GPU tests of the dispatcher, fuzz, timing with
# stream-K on / off / forced grids beside cuBLAS, sanitizers on the new kernels.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; T=$PWD/bin/test-gpu; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
SECONDS=0
fin() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt; tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 120 $T --ignored --test-threads=1 dispatcher > $O/tests.log 2>&1; echo "rc=$?" >> $O/tests.log ) &
( timeout 120 $R fuzz --family gemm --cases 300 --seed 14 > $O/fuzz.log 2>&1; echo "rc=$?" >> $O/fuzz.log ) &
wait; echo "tests+fuzz: ${SECONDS}s"; grep -E "^test |test result" $O/tests.log; tail -3 $O/fuzz.log
S=777x1234x555,1531,2999x3001x2997,1000,768,1536,2176,2048,256,512
( timeout 90 $R bench gemm --sizes $S --variants small_tile --out $O/sk ) > $O/sk.log 2>&1
( RUSTILE_SGEMM_STREAM_K=off timeout 90 $R bench gemm --sizes $S --variants small_tile --out $O/off ) > $O/off.log 2>&1
for f in sk off; do echo "== $f"; grep -E "^\|" $O/$f.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6; done
for c in 132 198; do
  ( RUSTILE_SGEMM_STREAM_K=$c timeout 40 $R bench gemm --sizes 777x1234x555,1531,1000 --variants small_tile --out $O/f$c ) > $O/f$c.log 2>&1
  echo "== ctas $c"; grep -E "^\|" $O/f$c.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6
done
echo "bench: ${SECONDS}s"
san() { local tool=$1 name=$2; shift 2; ( timeout 100 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
san memcheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san racecheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san initcheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san synccheck sk $T --ignored --test-threads=1 dispatcher_runs_stream_k
san memcheck fuzz $R fuzz --family gemm --cases 40 --seed 7
wait; echo "sanitizers: ${SECONDS}s"; for f in $O/san-*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) $(tail -1 $f)"; done
# The big squares: does the zero-fill edge copy cost the NT pipeline anything where it has no edge?
( timeout 60 $R bench gemm --sizes 4096,8192,2048 --variants small_tile --out $O/big ) > $O/big.log 2>&1
echo "== big"; grep -E "^\|" $O/big.log | grep -E "dispatch|cuBLAS" | cut -d'|' -f2-6
# Per-kernel times of the forced stream-K run at 777x1234x555 (pad transpose, stream-K, fix-up).
( RUSTILE_SGEMM_STREAM_K=132 timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 40 --launch-count 12 $R bench gemm --sizes 777x1234x555 --variants small_tile --out $O/ncu > $O/ncu.log 2>&1 ) 
grep -E '^  [a-z_]|gpu__time' $O/ncu.log | head -48
echo "total: ${SECONDS}s"
