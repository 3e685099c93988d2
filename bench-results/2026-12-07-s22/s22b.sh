#!/usr/bin/env bash
# Session 22's third device call: where the last ~0.5 % at 4096³ might be, with the TMA-store
# default. The clustered pair (RUSTILE_HGEMM_PAIR=1) with the staging (session 18 ran it with
# direct stores only: 1.2–1.9 % slower), the tile order's band (--group; the default is 16),
# the default bracketing them. Then the pair validated against float64 (in case it wins).
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_PATH=/tmp/cudacache CUDA_CACHE_MAXSIZE=4294967296
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $O/gpu.txt; cat $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
show() { grep -E "^\|" "$1" | grep -v -- "---" | cut -d'|' -f2-9,10,11; }
H="$R hgemm bench --types f16,bf16 --b bn,bt --timing interleaved --warmup 5 --rows 128 --width 256"
for run in "4096 s 50 16 0" "4096 pair 50 16 1" "4096 g8 50 8 0" "4096 g32 50 32 0" "4096 g24 50 24 0" "4096 g12 50 12 0" "4096 pair2 50 16 1" "4096 s2 50 16 0" "8192 pair 20 16 1" "8192 s 20 16 0"; do
  set -- $run
  [[ $SECONDS -lt 200 ]] || break
  ( RUSTILE_HGEMM_PAIR=$5 timeout 90 $H --reps $3 --group $4 --sizes $1 --results $O/h$1-$2 ) > $O/h$1-$2.log 2>&1
  echo "== $1 $2 ${SECONDS}s"; show $O/h$1-$2.log
done
fin
( RUSTILE_HGEMM_PAIR=1 timeout 150 $R validate hgemm --quick --seed 22 --case 'hgemm/wgmma_ws ' > $O/validate-pair.log 2>&1; echo "rc=$?" >> $O/validate-pair.log )
echo "== validate pair ${SECONDS}s"; grep -iE "fail|mismatch|panic|error" $O/validate-pair.log | head -5; tail -2 $O/validate-pair.log
echo "total: ${SECONDS}s"
