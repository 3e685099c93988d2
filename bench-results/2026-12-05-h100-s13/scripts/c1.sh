#!/usr/bin/env bash
# Session 13, call 1: validation of HEAD (conv quick, hgemm quick with the session-12 tiles), then the conv bars at batch 32.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache
R=$PWD/bin/rustile; O=$OUT/a; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $O/smi.txt
cat $O/smi.txt
SECONDS=0
# Parallel first pass: warms the driver's JIT cache (one module per kernel) on 16 cores.
for pat in hgemm/auto hgemm/mma hgemm/wgmma_ws_n hgemm/wgmma_ws_m64 "hgemm/wgmma_ws "; do
  ( timeout 300 $R validate hgemm --quick --case "$pat" > "$O/vh-${pat//[\/ ]/_}.log" 2>&1; echo "rc=$?" >> "$O/vh-${pat//[\/ ]/_}.log" ) &
done
( timeout 300 $R validate conv --quick > $O/vconv.log 2>&1; echo "rc=$?" >> $O/vconv.log ) &
wait
echo "parallel pass: ${SECONDS}s"; for f in $O/vh-*.log $O/vconv.log; do echo "$f: $(tail -3 $f | tr '\n' ' ')"; done
( time timeout 200 $R validate hgemm --quick ) > $O/vhgemm-full.log 2>&1; echo "full hgemm: ${SECONDS}s"; tail -4 $O/vhgemm-full.log
( time timeout 240 $R conv bench --types f16,bf16 --batch 32 --out $O/b32 ) > $O/b32.log 2>&1
echo "end: ${SECONDS}s"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
tar czf $OUT/a.tgz -C $OUT a
tail -30 $O/b32.log
