#!/usr/bin/env bash
# Session 22's third device call. The TMA-store staging through `stmatrix.x4` (16 per consumer
# thread per tile instead of 64 32-bit st.shared) against the previous binary (bin/rustile-old,
# commit cd2d4e5: the same kernels with st.shared staging), alternated in one call; the pair
# with the staging; the tile order's band; then correctness of the new staging: the bitwise
# test, float64 validation of the wide tile, conv's staged epilogue
# (--tma-stores, each bench case checked against float64), memcheck. Trimmed to ~200 s: the
# session's device budget was down to 644 s after refused starts.
# Not run: nine start attempts got no machine. See s22d.sh for how to stage it later.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
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
for run in "new 4096 50 16 0 $R" "old 4096 50 16 0 $R0" "new2 4096 50 16 0 $R" "old2 4096 50 16 0 $R0" \
           "pair 4096 50 16 1 $R" "g8 4096 50 8 0 $R" "g32 4096 50 32 0 $R" "new3 4096 50 16 0 $R" \
           "new 8192 20 16 0 $R" "old 8192 20 16 0 $R0" "pair 8192 20 16 1 $R"; do
  set -- $run
  [[ $SECONDS -lt 75 ]] || break
  ( RUSTILE_HGEMM_PAIR=$5 timeout 90 $6 $B --reps $3 --group $4 --sizes $2 --results $O/h$2-$1 ) > $O/h$2-$1.log 2>&1
  echo "== $2 $1 ${SECONDS}s"; show $O/h$2-$1.log
done
fin
( timeout 90 $R validate hgemm --quick --seed 23 --case 'hgemm/wgmma_ws ' > $O/validate-wide.log 2>&1; echo "rc=$?" >> $O/validate-wide.log ) &
( timeout 90 $R conv bench --types f16,bf16 --batch 8 --tma-stores --no-baseline --reps 2 --warmup 1 --seed 23 > $O/conv-staged.log 2>&1; echo "rc=$?" >> $O/conv-staged.log ) &
wait
for f in validate-wide conv-staged; do echo "== $f ${SECONDS}s"; grep -iE "fail|mismatch|panic|error" $O/$f.log | head -5; tail -2 $O/$f.log; done
fin
if [[ $SECONDS -lt 200 ]]; then
  ( timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 1000x1096x520,2100x1000x300 --types f16,bf16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck.log 2>&1
  echo "memcheck rc=$? ${SECONDS}s"; grep -E "ERROR SUMMARY" $O/memcheck.log | head -2
fi
echo "total: ${SECONDS}s"
