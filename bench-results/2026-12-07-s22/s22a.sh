#!/usr/bin/env bash
# Session 22's second device call (the first, s21a.sh, ran on an H100: the H200 did not start).
# TMA stores now the default (RUSTILE_HGEMM_TMA_STORE=0: direct stores). Stage with
# `scripts/stage-gpu`, keep bin/{rustile,test-gpu}.gz, `cp bench-results/2026-12-07-s22/s22a.sh
# .gpu/`, run `.gpu/s22a.sh` with carry [".gpu"].
#  1. 4096³ interleaved: default (TMA stores), direct, default again; 8192³ default;
#  2. ncu: the stream-K tail against the default at 4096³ f16 bn (SM-active spread, DRAM, L2);
#  3. validation (float64) of the wide tile and auto with the new default; bitwise test;
#     memcheck of the default wide path.
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
for run in "4096 s 50" "4096 d 50" "4096 s2 50" "8192 s 30"; do
  set -- $run
  [[ $SECONDS -lt 200 ]] || break
  case $2 in d) st=0 ;; *) st=1 ;; esac
  ( RUSTILE_HGEMM_TMA_STORE=$st timeout 90 $H --reps $3 --sizes $1 --results $O/h$1-$2 ) > $O/h$1-$2.log 2>&1
  echo "== $1 $2 ${SECONDS}s"; show $O/h$1-$2.log
done
fin
M=gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.min,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
for sk in 0 1; do
  ( RUSTILE_HGEMM_SK_TAIL=$sk timeout 60 ncu --clock-control none -k regex:hgemm_wgmma -c 3 --metrics $M $R hgemm bench --sizes 4096 --types f16 --b bn --rows 128 --width 256 --reps 2 --warmup 0 --timing interleaved ) > $O/ncu-sk$sk.log 2>&1
  echo "== ncu sk=$sk ${SECONDS}s"; grep -E "hgemm_wgmma|duration|cycles_active|dram__bytes|hit_rate" $O/ncu-sk$sk.log | head -16
done
fin
( timeout 200 $R validate hgemm --quick --seed 22 --case 'hgemm/wgmma_ws ' > $O/validate-wide.log 2>&1; echo "rc=$?" >> $O/validate-wide.log ) &
( timeout 200 $R validate hgemm --quick --seed 22 --case 'hgemm/auto' > $O/validate-auto.log 2>&1; echo "rc=$?" >> $O/validate-auto.log ) &
( timeout 60 bin/test-gpu --ignored --exact hgemm_tma_store_epilogue_matches_direct_stores --nocapture > $O/test.log 2>&1; echo "rc=$?" >> $O/test.log ) &
wait
for f in validate-wide validate-auto test; do echo "== $f ${SECONDS}s"; grep -iE "fail|mismatch|panic|error|SKIPPED" $O/$f.log | head -5; tail -2 $O/$f.log; done
fin
if [[ $SECONDS -lt 420 ]]; then
  ( timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $R hgemm bench --sizes 1000x1096x520,4096 --types f16,bf16 --b bn,bt --rows 128 --width 256 --reps 1 --warmup 0 --timing interleaved ) > $O/memcheck.log 2>&1
  echo "memcheck rc=$? ${SECONDS}s"; grep -E "ERROR SUMMARY" $O/memcheck.log | head -2
fi
echo "total: ${SECONDS}s"
