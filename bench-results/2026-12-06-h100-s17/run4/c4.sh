#!/usr/bin/env bash
# Session 17, call 4: the dispatcher's new rows_any rule (fewer 128 × 128 tiles than SMs, at
# least as many 64 × 64 tiles): GPU tests, fuzz, and the dispatcher against cuBLAS and the
# kernel it ran before (kgroup_ring / small_tile) on the shapes the rule moved.
cd "$(dirname "$0")"
for z in bin/*.xz; do [[ -e $z ]] && xz -dc "$z" > "${z%.xz}" && chmod +x "${z%.xz}" && rm -f "$z"; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
R=$PWD/bin/rustile; T=$PWD/bin/test-gpu; S=$PWD/bin/test-skinny; O=$OUT/c; mkdir -p $O
cat COMMIT > $O/commit; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $O/gpu.txt
SECONDS=0
fin() { tar czf $OUT/c.tgz -C $OUT c; }
trap fin EXIT
( timeout 120 $T --ignored --test-threads=1 dispatcher > $O/tests.log 2>&1; echo "rc=$?" >> $O/tests.log ) &
( timeout 120 $S --ignored --test-threads=1 > $O/skinny.log 2>&1; echo "rc=$?" >> $O/skinny.log ) &
( timeout 120 $R fuzz --family gemm --cases 300 --seed 31 > $O/fuzz.log 2>&1; echo "rc=$?" >> $O/fuzz.log ) &
wait; fin; echo "tests+fuzz: ${SECONDS}s"; grep -E "^test |test result" $O/tests.log $O/skinny.log; tail -2 $O/fuzz.log
( timeout 120 $R bench gemm --sizes 768,832,896,700x900x600,384x1536x1024,1100x1100x64,704,777x1234x555,1000 --variants kgroup_ring,small_tile --out $O/moved ) > $O/moved.log 2>&1
echo "== moved"; grep -E "^\|" $O/moved.log | cut -d'|' -f2-7 | grep -v -- "---"
echo "total: ${SECONDS}s"
