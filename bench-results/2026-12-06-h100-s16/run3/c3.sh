#!/usr/bin/env bash
# Session 16, call 4: the tensor-core bars re-measured on the H100 (interleaved: one clock for
# rustile and cuBLAS, rep by rep): 4096³, 8192³, 16384³, 4095³, 3001×3003×2999 (f16/bf16, B
# row-major and transposed), and the sm_80 path (mma_pipeline) at 8192³, interleaved and settled.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; O=$OUT/d; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $O/smi.txt
SECONDS=0
fin() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt; tar czf $OUT/d.tgz -C $OUT d; }
trap fin EXIT
H="$R hgemm bench --reps 30"
( timeout 200 $H --timing interleaved --types f16,bf16 --b bn,bt --sizes 4096,8192,16384,4095,3001x3003x2999 --results $O/big ) > $O/big.log 2>&1
echo "big: ${SECONDS}s"
( timeout 100 $H --timing interleaved --variants mma_pipeline --types f16,bf16 --b bn,bt --sizes 8192 --results $O/sm80i ) > $O/sm80i.log 2>&1
( timeout 100 $H --timing sequential --variants mma_pipeline --types f16 --b bn,bt --sizes 8192 --results $O/sm80s ) > $O/sm80s.log 2>&1
echo "sm80: ${SECONDS}s"
for f in $O/big.log $O/sm80i.log $O/sm80s.log; do echo "== $f"; grep -E "^\| (f16|bf16)" $f | cut -d'|' -f2-6,8-12; grep -iE "error|fail" $f | head -3; done
