#!/usr/bin/env bash
# Session 16, call 5: what cuBLAS runs at 4096³ f16 (kernel name = tile, cluster, schedule) and
# how both kernels use the tensor pipe, DRAM and L2 (ncu, clocks not locked, caches warm).
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; O=$OUT/e; mkdir -p $O
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__registers_per_thread,launch__shared_mem_per_block_dynamic
for s in 4096 8192; do
for b in bn bt; do
( timeout 120 ncu --clock-control none --cache-control none --metrics $M -k regex:'ws|nvjet|xmma|sm90|cutlass|gemm_f' --launch-skip 2 --launch-count 6 $R hgemm bench --sizes $s --types f16 --b $b --reps 4 --warmup 2 --timing interleaved --results $O/r$s$b > $O/ncu-$s-$b.log 2>&1 )
echo "== $s $b"; grep -E '^  [a-zA-Z_]|gpu__time|pct|bytes|per_second|launch__' $O/ncu-$s-$b.log | head -60
done
done
tar czf $OUT/e.tgz -C $OUT e
