#!/usr/bin/env bash
# One GPU run: orch GPU tests + `rustile orchestration` (transfers, overlap copy/transpose/gather/
# SGEMM with resident B, launch, memory), then a fixed-shape SGEMM overlap (32 MiB chunks, N=1024).
here=$(cd "$(dirname "$0")" && pwd)
o=$OUT/o
mkdir -p "$o/gemm-n1024"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$o/nvidia-smi.csv" 2>&1
start=$(date +%s)
OUT=$o timeout 160 "$here/run.sh" orch
echo "orch rc=$? in $(( $(date +%s) - start )) s" >>"$o/go.log"
left=$(( 185 - ($(date +%s) - start) ))
if [ "$left" -gt 15 ]; then
  RUSTILE_COMMIT=$(cat "$here/COMMIT") timeout $(( left - 5 )) "$here/bin/rustile" overlap --kernel gemm:4096:1024 \
    --no-pageable --reps 5 --out "$o/gemm-n1024" >"$o/gemm-n1024/overlap.log" 2>&1
  echo "gemm-n1024 rc=$? at $(( $(date +%s) - start )) s" >>"$o/go.log"
fi
cd "$OUT" && tar czf all.tgz o && rm -rf o
