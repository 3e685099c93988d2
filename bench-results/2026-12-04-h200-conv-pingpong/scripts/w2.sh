#!/usr/bin/env bash
# Session 10, call B: batch 1 (dispatcher and forced widths), the issue-16 hgemm shapes, PyTorch cross-check, sanitizers.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/b; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
( time timeout 60 $R conv bench --types f16,bf16 --batch 1 --out $O/b1 ) > $O/b1.log 2>&1
( time timeout 60 $R conv bench --types f16 --batch 1 --variants wgmma_n64,wgmma_n64_pp,wgmma_pp --no-baseline --reps 30 ) > $O/b1-widths.log 2>&1
S=4095,3001x3003x2999,16x16384x16384,64x8192x8192,12288x32x12288,8192x8192x16,8192x8192x64,512,1024,2048,4096,8192,16384
( time timeout 150 $R hgemm bench --sizes $S --types f16,bf16 --b bn,bt --out $O/hgemm ) > $O/hgemm.log 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
D=/tmp/dump; rm -rf $D; mkdir -p $D
( timeout 60 $R conv dump --types f16,bf16 --out $D/dispatch; timeout 60 $R validate conv --quick --case _pp --dump $D/pp ) > $O/dump.log 2>&1
( time timeout 120 python3 scripts/conv_torch.py check $D/dispatch $D/pp ) 2>&1 | tail -n 20 > $O/torch-check.log
rm -rf $D
# Sanitizers over the ping-pong widths and the hgemm kernel with the new epilogue, side by side.
san() { local tool=$1 name=$2; shift 2; ( timeout 200 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
san memcheck conv $R validate conv --quick
san racecheck pp-f16 $R validate conv --quick --case 'conv/wgmma_pp f16'
san racecheck pp-bf16 $R validate conv --quick --case 'conv/wgmma_pp bf16'
san racecheck n64pp-f16 $R validate conv --quick --case 'conv/wgmma_n64_pp f16'
san racecheck n64pp-bf16 $R validate conv --quick --case 'conv/wgmma_n64_pp bf16'
san racecheck n256 $R validate conv --quick --case 'conv/wgmma_n256'
san racecheck hgemm-ws $R validate hgemm --quick --case 'hgemm/wgmma_ws'
san synccheck pp $R validate conv --quick --case _pp
wait
for f in $O/san-*.log; do echo "$(basename $f): $(grep -E 'SUMMARY|validated|rc=' $f | tr '\n' ' ')"; done > $O/san-summary.txt
tar czf $OUT/b.tgz -C $OUT b
cat $O/san-summary.txt; tail -5 $O/torch-check.log; grep -E "^\| (f16|bf16)" $O/hgemm.log | cut -d'|' -f2-8; grep -E "^\| l|^\| stem" $O/b1-widths.log | cut -d'|' -f2,4-6
