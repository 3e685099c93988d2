#!/usr/bin/env bash
# s22c.sh cut to what 254 s of device budget (start included) can hold: the bitwise test of
# the stmatrix staging, then 4096³ new / old alternated (bin/rustile-old: commit cd2d4e5, the
# st.shared staging), then conv's staged epilogue checked against float64 if time is left.
# Not run (no machine could start). For a later session: stage the build with
# notes/patches/stmatrix-staging.patch applied as bin/rustile.gz and the unpatched build as
# bin/rustile-old.gz.
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
( timeout 40 bin/test-gpu --ignored --exact hgemm_tma_store_epilogue_matches_direct_stores --nocapture > $O/test.log 2>&1; echo "rc=$?" >> $O/test.log )
echo "== bitwise ${SECONDS}s"; tail -3 $O/test.log
B="hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --warmup 5 --rows 128 --width 256"
for run in "new 4096 40 $R" "old 4096 40 $R0" "new2 4096 40 $R" "old2 4096 40 $R0" "new 8192 15 $R" "old 8192 15 $R0"; do
  set -- $run
  [[ $SECONDS -lt 60 ]] || break
  ( timeout 30 $4 $B --reps $3 --sizes $2 --results $O/h$2-$1 ) > $O/h$2-$1.log 2>&1
  echo "== $2 $1 ${SECONDS}s"; show $O/h$2-$1.log
done
fin
if [[ $SECONDS -lt 80 ]]; then
  ( timeout 40 $R conv bench --types f16,bf16 --batch 8 --tma-stores --no-baseline --reps 2 --warmup 1 --seed 23 > $O/conv-staged.log 2>&1; echo "rc=$?" >> $O/conv-staged.log )
  echo "== conv staged ${SECONDS}s"; grep -iE "fail|mismatch|panic|error" $O/conv-staged.log | head -5; tail -2 $O/conv-staged.log
fi
echo "total: ${SECONDS}s"
