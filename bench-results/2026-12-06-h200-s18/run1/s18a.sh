#!/usr/bin/env bash
# Session 18, call 1: the clustered pair (wgmma_pair, RUSTILE_HGEMM_PAIR=1): smoke, validate, 4096³/8192³ vs the wide tile.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
H="$R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --reps 30 --warmup 5"
( RUSTILE_HGEMM_PAIR=1 timeout 40 $R hgemm bench --sizes 4096 --types f16 --b bn --reps 3 --warmup 1 --results $O/smoke ) > $O/smoke.log 2>&1; rc=$?; echo "smoke rc=$rc ${SECONDS}s"; tail -5 $O/smoke.log
OK=0; [[ $rc == 0 ]] && OK=1; grep -c "wgmma_pair" $O/smoke.log
[[ $OK == 1 ]] && ( RUSTILE_HGEMM_PAIR=1 timeout 120 $R hgemm validate --quick --seed 18 > $O/validate-pair.log 2>&1; echo "rc=$?" >> $O/validate-pair.log )
fin; echo "validate: ${SECONDS}s"; grep -c "wgmma_pair" $O/validate-pair.log; grep -iE "fail|mismatch|error|panic" $O/validate-pair.log | head -5; tail -3 $O/validate-pair.log
for sz in 4096 8192; do
( timeout 120 $H --sizes $sz --results $O/h$sz-wide ) > $O/h$sz-wide.log 2>&1
[[ $OK == 1 ]] && ( RUSTILE_HGEMM_PAIR=1 timeout 120 $H --sizes $sz --results $O/h$sz-pair ) > $O/h$sz-pair.log 2>&1
for f in wide pair; do echo "== $sz $f"; grep -E "^\|" $O/h$sz-$f.log | grep -v -- "---" | cut -d'|' -f2-9; done
fin; echo "bench $sz: ${SECONDS}s"
done
S=1100x1100x64,1100x1100x128,1100x1100x256,1100x1100x512,1000x1000x64,1000x1000x128,1000x1000x192,1000x1000x256,1000x1000x384,768x768x64,768x768x128,768x768x256,777x1234x128,777x1234x256,1200x1300x96
[[ $SECONDS -lt 300 ]] && ( timeout 100 $R bench gemm --sizes $S --variants rows_any,small_tile --out $O/shortk ) > $O/shortk.log 2>&1
echo "== sgemm short-K"; grep -E "^\|" $O/shortk.log | cut -d'|' -f2-7 | grep -v -- "---"
if [[ $OK == 1 && $SECONDS -lt 340 ]]; then
( RUSTILE_HGEMM_PAIR=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 1000,1100 --types f16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck-pair.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|wgmma" $O/memcheck-pair.log | head -4
fi
echo "total: ${SECONDS}s"
