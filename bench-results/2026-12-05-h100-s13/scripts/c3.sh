#!/usr/bin/env bash
# Session 13, call 3 (trimmed to the device time left): validation of bc1188a..e69bbe6's kernels
# (conv f32 split-K, small_tile SGEMM, the hgemm model's picks), their timing beside cuDNN /
# cuBLAS, the PyTorch cross-check of the f32 dispatcher (split), GPU fuzz of the SGEMM
# dispatcher, the conv bars, sanitizers last.
cd "$(dirname "$0")"
for z in bin/*.gz; do [[ -e $z ]] && gzip -dc "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cudacache PYTHONUNBUFFERED=1
R=$PWD/bin/rustile; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt
SECONDS=0
fin() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $O/smi.txt; rm -rf $O/dump; tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 100 $R validate conv --quick > $O/vconv.log 2>&1; echo "rc=$?" >> $O/vconv.log ) &
( timeout 100 $R validate hgemm --quick --case hgemm/auto > $O/vhgemm-auto.log 2>&1; echo "rc=$?" >> $O/vhgemm-auto.log ) &
( timeout 100 $R conv dump --types f32 --out $O/dump > $O/dump.log 2>&1 && python3 conv_torch.py check $O/dump > $O/torch-check.log 2>&1; echo "rc=$?" >> $O/torch-check.log ) &
( timeout 100 $R validate gemm --quick > $O/vgemm.log 2>&1; echo "rc=$?" >> $O/vgemm.log ) &
wait; echo "validate: ${SECONDS}s"; for f in vconv vhgemm-auto vgemm; do echo "$f: $(tail -2 $O/$f.log | tr '\n' ' ')"; done; tail -2 $O/torch-check.log
C="$R conv bench --types f32 --f32-nhwc --variants regblock --layers 3x3"
( timeout 40 $C --out $O/f32-nhwc-auto ) > $O/f32-nhwc-auto.log 2>&1
( timeout 40 $C --splits 1 --out $O/f32-nhwc-whole ) > $O/f32-nhwc-whole.log 2>&1
for f in f32-nhwc-auto f32-nhwc-whole; do grep -E "^\| l" $O/$f.log | cut -d'|' -f2,4-8,10 | sort -u; done
( timeout 60 $R bench gemm --sizes 256,512,777x1234x555,1000,1531,2048,2999x3001x2997 --variants small_tile,kgroup_ring,kgroup_ring_kg1,warptile --out $O/sgemm ) > $O/sgemm.log 2>&1
grep -E "^\|" $O/sgemm.log | cut -d'|' -f2-4,6 | grep -v -- "---"
( timeout 40 $R hgemm bench --timing interleaved --reps 30 --types f16,bf16 --b bn,bt --sizes 16x16384x16384,64x8192x8192 --results $O/hgemm ) > $O/hgemm.log 2>&1
grep -E "^\| (f16|bf16)" $O/hgemm.log | cut -d'|' -f2-5,8
echo "benches: ${SECONDS}s"
( timeout 25 $R fuzz --family gemm --cases 300 --seed 13 > $O/fuzz-gemm.log 2>&1; echo "rc=$?" >> $O/fuzz-gemm.log ); tail -2 $O/fuzz-gemm.log
( timeout 40 $R conv bench --types f16,bf16 --batch 32 --out $O/b32 ) > $O/b32.log 2>&1
echo "b32: ${SECONDS}s"
san() { local tool=$1 name=$2; shift 2; ( timeout 85 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 "$@" > $O/san-$tool-$name.log 2>&1; echo "rc=$?" >> $O/san-$tool-$name.log ) & }
san memcheck gemm-small $R validate gemm --quick --case small_tile
san racecheck gemm-small $R validate gemm --quick --case small_tile
san memcheck conv-split $R validate conv --quick --case regblock
san racecheck conv-split $R validate conv --quick --case regblock
for t in n128 n64 m64 m64_n128; do san memcheck hgemm-$t $R validate hgemm --quick --case "hgemm/wgmma_ws_$t "; done
for t in n128 n64 m64; do san racecheck hgemm-$t-cut $R validate hgemm --quick --case "_$t cut"; done
wait; echo "sanitizers: ${SECONDS}s"
for f in $O/san-*.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ') $(grep -oE 'validated [0-9]+ .*failed' $f) $(tail -1 $f)"; done
