#!/usr/bin/env bash
# Session 16, call 9: why rustile's wgmma_ws keeps the tensor pipe 83.5 % busy at 4096³ where
# cuBLAS's 2-CTA-cluster kernel keeps it 89.9 %: ncu warp-state, scheduler and memory sections
# of one launch of each (f16, B row-major), clocks not locked.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/g; mkdir -p $O
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section LaunchStats"
for k in hgemm_wgmma_ws nvjet; do
( timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:$k --launch-skip 2 --launch-count 1 $R hgemm bench --sizes 4096 --types f16 --b bn --reps 4 --warmup 2 --timing interleaved --results $O/r-$k > $O/ncu-$k.txt 2>&1 )
done
tar czf $OUT/g.tgz -C $OUT g
for k in hgemm_wgmma_ws nvjet; do echo "=== $k"; grep -E "^  [a-zA-Z_]|Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|Active Warps|No Eligible|One or More|L2 Hit|Mem Busy|Max Bandwidth|Pipe" $O/ncu-$k.txt | head -45; done
