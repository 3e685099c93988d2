#!/usr/bin/env bash
# Session 21's device call, NOT RUN in session 21 (its 30 device minutes had been spent by
# session 20's retry-shared budget: 238 s left, under the 240 s a start needs). The next
# session's first call. Stage with `scripts/stage-gpu && cp bench-results/2026-12-07-s21/s21a.sh
# .gpu/`, then run `.gpu/s21a.sh` with carry [".gpu"]. Under 600 s; each step time-guarded.
#  1. bitwise: the predicated TMA-store epilogue (RUSTILE_HGEMM_TMA_STORE=1) against direct
#     stores — the decision to make it the default;
#  2. 4096³ / 8192³ interleaved with cuBLAS: direct stores, TMA stores, TMA stores + the
#     stream-K tail (RUSTILE_HGEMM_SK_TAIL=1, wgmma_sk);
#  3. validation (float64) of the wide tile with the staging, of auto with the stream-K tail
#     (its 2700×2600×700 case is cut), of the tail alone at 3900×4100×1000 (527 tiles: 3 whole waves, 131 tiles cut), and of conv's
#     stream-K/cut cases (run_stream_k gained its dp_tiles argument);
#  4. racecheck + memcheck on the stream-K tail.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_PATH=/tmp/cudacache CUDA_CACHE_MAXSIZE=4294967296
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
show() { grep -E "^\|" "$1" | grep -v -- "---" | cut -d'|' -f2-9; }
( RUSTILE_HGEMM_TMA_STORE=1 timeout 90 bin/test-gpu --ignored --exact hgemm_tma_store_epilogue_matches_direct_stores --nocapture ) > $O/test.log 2>&1
echo "bitwise test rc=$? ${SECONDS}s"; tail -3 $O/test.log
( timeout 90 bin/test-gpu --ignored --exact hgemm_stream_k_tail_validates_where_it_cuts_tiles --nocapture ) > $O/test-sk.log 2>&1
echo "stream-K tail test rc=$? ${SECONDS}s"; tail -3 $O/test-sk.log
H="$R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --reps 30 --warmup 5 --rows 128 --width 256"
# mode: d = direct stores, s = TMA stores, k = TMA stores + stream-K tail
for run in "4096 d" "4096 s" "4096 k" "8192 s" "8192 k" "8192 d"; do
  set -- $run
  [[ $SECONDS -lt 290 ]] || break
  case $2 in d) st=0 sk=0 ;; s) st=1 sk=0 ;; k) st=1 sk=1 ;; esac
  ( RUSTILE_HGEMM_TMA_STORE=$st RUSTILE_HGEMM_SK_TAIL=$sk timeout 90 $H --sizes $1 --results $O/h$1-$2 ) > $O/h$1-$2.log 2>&1
  echo "== $1 $2 ${SECONDS}s"; show $O/h$1-$2.log
done
fin
( RUSTILE_HGEMM_TMA_STORE=1 timeout 150 $R validate hgemm --quick --seed 21 --case 'hgemm/wgmma_ws ' > $O/validate-wide.log 2>&1; echo "rc=$?" >> $O/validate-wide.log ) &
( RUSTILE_HGEMM_TMA_STORE=1 RUSTILE_HGEMM_SK_TAIL=1 timeout 150 $R validate hgemm --quick --seed 21 --case 'hgemm/auto' > $O/validate-auto-sk.log 2>&1; echo "rc=$?" >> $O/validate-auto-sk.log ) &
( RUSTILE_HGEMM_SK_TAIL=1 timeout 150 $R hgemm validate --shape 3900x4100x1000 --variant wgmma_ws --seed 21 > $O/validate-sk-shape.log 2>&1; echo "rc=$?" >> $O/validate-sk-shape.log ) &
( timeout 150 $R validate conv --quick --case ' cut ' > $O/validate-conv-cut.log 2>&1; echo "rc=$?" >> $O/validate-conv-cut.log ) &
wait
for f in wide auto-sk sk-shape conv-cut; do echo "== validate $f ${SECONDS}s"; grep -iE "fail|mismatch|panic|error" $O/validate-$f.log | head -5; tail -2 $O/validate-$f.log; done
fin
if [[ $SECONDS -lt 480 ]]; then
  ( RUSTILE_HGEMM_SK_TAIL=1 timeout 60 compute-sanitizer --tool racecheck $R hgemm bench --sizes 2700x2600x700 --types f16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/racecheck-sk.log 2>&1
  echo "racecheck ${SECONDS}s"; grep -E "RACECHECK SUMMARY" $O/racecheck-sk.log; echo "hazard lines naming rustile kernels: $(grep -c 'hgemm_wgmma' $O/racecheck-sk.log)"
  ( RUSTILE_HGEMM_SK_TAIL=1 timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 2700x2600x700 --types f16,bf16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck-sk.log 2>&1
  echo "memcheck rc=$? ${SECONDS}s"; grep -E "ERROR SUMMARY" $O/memcheck-sk.log | head -2
fi
echo "total: ${SECONDS}s"
