#!/usr/bin/env bash
# Session 11, call C: the issue-16 bar shapes after the epilogue change (hgemm, SGEMM, memory).
cd "$(dirname "$0")"
for z in bin/rustile.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
S=4095,3001x3003x2999,16x16384x16384,64x8192x8192,12288x32x12288,8192x8192x16,8192x8192x64,512,1024,2048,4096,8192,16384
( time timeout 240 $R hgemm bench --sizes $S --types f16,bf16 --b bn,bt --timing interleaved --results $O/hgemm ) > $O/hgemm.log 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
( time timeout 60 $R hgemm bench --sizes 8192 --types f16,bf16 --b bn,bt --variants mma_pipeline --timing interleaved --results $O/hgemm-sm80 ) > $O/hgemm-sm80.log 2>&1
( time timeout 120 $R bench gemm --sizes 1x16384x8192,16384x1x8192,4x12288x12288,12288x12288x2,777x1234x555,1531,2999x3001x2997,256,512 --variants warptile --out $O/sgemm ) > $O/sgemm.log 2>&1
( time timeout 90 $R bench memory --out $O/memory ) > $O/memory.log 2>&1
tar czf $OUT/c.tgz -C $OUT c
grep -E "^\| (f16|bf16)" $O/hgemm.log $O/hgemm-sm80.log | cut -d'|' -f2-8; grep -E "^\|" $O/sgemm.log | head -40; grep -E "^\|" $O/memory.log | head -40; tail -3 $O/*.log | grep -iE "error|real" 
