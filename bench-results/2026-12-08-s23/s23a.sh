#!/usr/bin/env bash
# Session 23's device call, staged but never run: no machine was lent in session 23 (every start
# refused). Stage it with
#   scripts/stage-ab --script bench-results/2026-12-08-s23/s23a.sh \
#     notes/patches/stmatrix-staging.patch notes/patches/sm80-ldmatrix-early.patch
# and run `bash .gpu/run.sh script s23a.sh` (carry [".gpu"]; ~250 s + start). bin/rustile, bin/test-gpu: HEAD +
# both patches (the TMA-store staging through stmatrix.x4; the sm_80 path's step-1 ldmatrix
# before the stage's cp.async, and tunings eb / eb5: one wait+barrier at the top of each
# k-tile, 4 / 5 stages). bin/rustile-old: HEAD (st.shared staging, the sm_80 path as measured).
# Order by importance: bitwise test of the new staging; 4096³ new/old alternated; the sm_80
# path at 8192³ new/old/new and the eb tunings; 8192³ new/old, pair and group band, 16384³;
# then correctness: float64 validation of mma_pipeline (the wide tile: the bitwise test),
# conv's staged epilogue, memcheck.
cd "$(dirname "$0")"
[[ -x bin/rustile && -x bin/rustile-old ]] || { echo "s23a.sh: run it as .gpu/run.sh script s23a.sh (which unpacks bin/)" >&2; exit 2; }
export CUDA_CACHE_PATH=/tmp/cudacache CUDA_CACHE_MAXSIZE=4294967296
R=$PWD/bin/rustile; R0=$PWD/bin/rustile-old; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
show() { grep -E "^\|" "$1" | grep -v -- "---" | cut -d'|' -f2-9,10,11; }
B="hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --warmup 5 --rows 128 --width 256"
( timeout 60 bin/test-gpu --ignored --exact hgemm_tma_store_epilogue_matches_direct_stores --nocapture > $O/test.log 2>&1; echo "rc=$?" >> $O/test.log )
echo "== bitwise ${SECONDS}s"; tail -3 $O/test.log
# name size reps group pair binary
hg() {
  for run in "$@"; do
    set -- $run
    [[ $SECONDS -lt $LIMIT ]] || break
    ( RUSTILE_HGEMM_PAIR=$5 timeout 90 $6 $B --reps $3 --group $4 --sizes $2 --results $O/h$2-$1 ) > $O/h$2-$1.log 2>&1
    echo "== $2 $1 ${SECONDS}s"; show $O/h$2-$1.log
  done
  fin
}
LIMIT=60 hg "new 4096 50 16 0 $R" "old 4096 50 16 0 $R0" "new2 4096 50 16 0 $R" "old2 4096 50 16 0 $R0" \
             "new3 4096 50 16 0 $R" "old3 4096 50 16 0 $R0"
S="hgemm bench --b bn,bt --sizes 8192 --variants mma_pipeline --reps 30 --timing interleaved"
for run in "new $R" "old $R0" "new2 $R"; do
  set -- $run; [[ $SECONDS -lt 100 ]] || break
  ( timeout 60 $2 $S --types f16,bf16 --results $O/sm80-$1 ) > $O/sm80-$1.log 2>&1
  echo "== sm80 $1 ${SECONDS}s"; show $O/sm80-$1.log
done
if [[ $SECONDS -lt 115 ]]; then
  ( timeout 50 $R $S --types f16 --pipelines default,eb,eb5 --results $O/sm80-eb ) > $O/sm80-eb.log 2>&1
  echo "== sm80 eb ${SECONDS}s"; show $O/sm80-eb.log
fi
fin
LIMIT=150 hg "new 8192 20 16 0 $R" "old 8192 20 16 0 $R0" "pair 4096 50 16 1 $R" "g8 4096 50 8 0 $R" \
             "g32 4096 50 32 0 $R" "new 16384 6 16 0 $R" "old 16384 6 16 0 $R0" "pairold 4096 50 16 1 $R0"
( timeout 50 $R validate hgemm --quick --seed 23 --case 'hgemm/mma_pipeline' > $O/validate-sm80.log 2>&1; echo "rc=$?" >> $O/validate-sm80.log ) &
( timeout 50 $R conv bench --types f16,bf16 --batch 8 --tma-stores --no-baseline --reps 2 --warmup 1 --seed 23 > $O/conv-staged.log 2>&1; echo "rc=$?" >> $O/conv-staged.log ) &
wait
for f in validate-sm80 conv-staged; do echo "== $f ${SECONDS}s"; grep -iE "fail|mismatch|panic|error" $O/$f.log | head -5; tail -2 $O/$f.log; done
fin
if [[ $SECONDS -lt 200 ]]; then
  ( timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 1000x1096x520,2100x1000x300 --types f16,bf16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck.log 2>&1
  echo "memcheck rc=$? ${SECONDS}s"; grep -E "ERROR SUMMARY" $O/memcheck.log | head -2
fi
echo "total: ${SECONDS}s"
