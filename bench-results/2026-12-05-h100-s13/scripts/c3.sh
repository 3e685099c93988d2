#!/usr/bin/env bash
# Session 13, call 3: the f32 regblock split-K and the hgemm model change — validation,
# timing beside cuDNN / cuBLAS, the conv bars at the final binary, PyTorch cross-check,
# sanitizers (conv split + regblock, the hgemm tiles).
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache PYTHONUNBUFFERED=1
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
SECONDS=0
# Validation in parallel (also warms the JIT cache): conv quick (with the split cases), the hgemm model's picks.
( timeout 200 $R validate conv --quick > $O/vconv.log 2>&1; echo "rc=$?" >> $O/vconv.log ) &
( timeout 200 $R validate hgemm --quick --case hgemm/auto > $O/vhgemm-auto.log 2>&1; echo "rc=$?" >> $O/vhgemm-auto.log ) &
( timeout 200 $R conv dump --types f32 --out $O/dump > $O/dump.log 2>&1 && python3 conv_torch.py check $O/dump > $O/torch-check.log 2>&1; echo "rc=$?" >> $O/torch-check.log ) &
wait; echo "validate: ${SECONDS}s"; tail -1 $O/vconv.log; tail -2 $O/vhgemm-auto.log | head -1; tail -3 $O/torch-check.log
C="$R conv bench --types f32 --layers 3x3"
( timeout 60 $C --f32-nhwc --variants regblock --out $O/f32-nhwc-auto ) > $O/f32-nhwc-auto.log 2>&1
( timeout 60 $C --f32-nhwc --variants regblock --splits 1 --out $O/f32-nhwc-whole ) > $O/f32-nhwc-whole.log 2>&1
( timeout 60 $C --variants regblock,kmajor --out $O/f32-nchw ) > $O/f32-nchw.log 2>&1
echo "f32: ${SECONDS}s"
( timeout 120 $R conv bench --types f16,bf16 --batch 32 --out $O/b32 ) > $O/b32.log 2>&1
echo "b32: ${SECONDS}s"
( timeout 120 $R hgemm bench --timing interleaved --reps 30 --types f16,bf16 --b bn,bt --sizes 16x16384x16384,64x8192x8192,12288x32x12288,8192x8192x16,8192x8192x64,512,1024,2048,4096,8192,16384 --results $O/hgemm ) > $O/hgemm.log 2>&1
echo "hgemm: ${SECONDS}s"
san() { local tool=$1 name=$2; shift 2; ( timeout 180 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
san memcheck conv-split $R validate conv --quick --case regblock
san racecheck conv-split $R validate conv --quick --case regblock
for t in n128 n64 m64 m64_n128; do san memcheck hgemm-$t $R validate hgemm --quick --case "hgemm/wgmma_ws_$t "; done
for t in n128 n64 m64; do san racecheck hgemm-$t-cut $R validate hgemm --quick --case "_$t cut"; done
wait; echo "sanitizers: ${SECONDS}s"
for f in $O/san-*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|validated' $f | tr '\n' ' ') $(tail -1 $f)"; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt
rm -rf $O/dump
tar czf $OUT/c.tgz -C $OUT c
for f in f32-nhwc-auto f32-nhwc-whole f32-nchw; do grep -E "^\| l" $O/$f.log | cut -d'|' -f2,4-8,10 | sort -u; done
grep -E "^\| (f16|bf16)" $O/hgemm.log | cut -d'|' -f2-5,8
