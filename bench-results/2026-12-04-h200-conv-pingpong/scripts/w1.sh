#!/usr/bin/env bash
# Session 10, call A: validation of the rebuilt kernels, then the dispatcher's ResNet-50 run at batch 32.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=bin/rustile; O=$OUT/a; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
( time timeout 100 $R validate conv --quick ) 2>&1 | tail -6 > $O/validate.log
( time timeout 110 $R validate hgemm --quick ) 2>&1 | tail -6 >> $O/validate.log
( time timeout 230 $R conv bench --types f16,bf16 --batch 32 --out $O/b32 ) > $O/b32.log 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
tar czf $OUT/a.tgz -C $OUT a
tail -4 $O/validate.log; tail -40 $O/b32.log
