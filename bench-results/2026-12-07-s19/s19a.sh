#!/usr/bin/env bash
# Session 19, call 1: the wide tile's TMA-store epilogue: bitwise test, 4096³/8192³ on vs off, validate, sanitizers.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export RUSTILE_HGEMM_TMA_STORE=1
export CUDA_CACHE_PATH=/tmp/cudacache CUDA_CACHE_MAXSIZE=4294967296
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 90 bin/test-gpu --ignored --exact hgemm_tma_store_epilogue_matches_direct_stores --nocapture ) > $O/test.log 2>&1; echo "test rc=$? ${SECONDS}s"; tail -4 $O/test.log
H="$R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --reps 30 --warmup 5 --rows 128 --width 256"
for sz in 4096 8192; do
  for mode in on off; do
    v=1; [[ $mode == off ]] && v=0
    [[ $SECONDS -lt 330 ]] && ( RUSTILE_HGEMM_TMA_STORE=$v timeout 100 $H --sizes $sz --results $O/h$sz-$mode ) > $O/h$sz-$mode.log 2>&1
    echo "== $sz $mode ${SECONDS}s"; grep -E "^\|" $O/h$sz-$mode.log | grep -v -- "---" | cut -d'|' -f2-9
  done
  fin
done
[[ $SECONDS -lt 300 ]] && ( RUSTILE_HGEMM_PAIR=1 timeout 100 $H --sizes 4096 --results $O/h4096-pair ) > $O/h4096-pair.log 2>&1
echo "== 4096 pair+store ${SECONDS}s"; grep -E "^\|" $O/h4096-pair.log | grep -v -- "---" | cut -d'|' -f2-9
if [[ $SECONDS -lt 400 ]]; then
  ( RUSTILE_HGEMM_PAIR=1 timeout 170 $R validate hgemm --quick --seed 19 --case 'wgmma_pair' > $O/validate-pair.log 2>&1; echo "rc=$?" >> $O/validate-pair.log ) &
  ( timeout 170 $R validate hgemm --quick --seed 19 --case 'hgemm/wgmma_ws ' > $O/validate-wide.log 2>&1; echo "rc=$?" >> $O/validate-wide.log ) &
  ( timeout 170 $R validate hgemm --quick --seed 19 --case 'hgemm/auto' > $O/validate-auto.log 2>&1; echo "rc=$?" >> $O/validate-auto.log ) &
  wait
  for f in wide auto pair; do echo "== validate $f ${SECONDS}s"; grep -iE "fail|mismatch|panic" $O/validate-$f.log | head -5; tail -3 $O/validate-$f.log; done
  fin
fi
if [[ $SECONDS -lt 420 ]]; then
  ( timeout 100 $R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --reps 8 --warmup 2 --rows 128 --width 256 --sizes 16384 --results $O/h16384-on ) > $O/h16384-on.log 2>&1
  echo "== 16384 on ${SECONDS}s"; grep -E "^\|" $O/h16384-on.log | grep -v -- "---" | cut -d'|' -f2-9
  fin
fi
if [[ $SECONDS -lt 520 ]]; then
  ( timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $R hgemm bench --sizes 1000 --types f16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/racecheck.log 2>&1; echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY" $O/racecheck.log; echo "hazard lines in rustile kernels: $(grep -c 'hgemm_wgmma' $O/racecheck.log)"
  ( RUSTILE_HGEMM_PAIR=1 timeout 60 compute-sanitizer --tool racecheck $R hgemm bench --sizes 1000 --types f16 --b bn --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/racecheck-pair.log 2>&1; grep -E "RACECHECK SUMMARY" $O/racecheck-pair.log; echo "pair hazard lines in rustile kernels: $(grep -c 'hgemm_wgmma' $O/racecheck-pair.log)"
fi
if [[ $SECONDS -lt 560 ]]; then
  ( timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 1000 --types f16 --b bn --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY" $O/memcheck.log | head -2
fi
echo "total: ${SECONDS}s"
