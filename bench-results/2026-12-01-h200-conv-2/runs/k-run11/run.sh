#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
gunzip -f bin/*.gz; chmod +x bin/*
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$PWD/bin/rustile; T=$PWD/bin/test-conv
O=$OUT/k; mkdir -p $O; cp COMMIT $O/
L=l1.b0.conv2,l2.b1.conv2,l3.b1.conv2,l4.b1.conv2
t() { local n=$1; shift; local s=$SECONDS; "$@"; echo "$n rc=$? t=$((SECONDS-s))" | tee -a $O/times.txt; }
t validate timeout 100 $R conv validate --full --seed 81 > $O/validate.log 2>&1
t f32 timeout 60 $R conv bench --types f32 --batch 32 --layers $L --reps 20 --seed 82 --variants regblock,kmajor --out $O/f32 > $O/f32.log 2>&1
t memcheck timeout 60 env RUSTILE_CONV_KERNELS=kmajor compute-sanitizer --tool memcheck --error-exitcode 9 $T --ignored --test-threads=1 every_conv > $O/san-memcheck.log 2>&1
t racecheck timeout 100 env RUSTILE_CONV_KERNELS=kmajor RUSTILE_CONV_MAX_CASES=8 compute-sanitizer --tool racecheck --error-exitcode 9 $T --ignored --test-threads=1 every_conv > $O/san-racecheck.log 2>&1
grep -h "validated" $O/validate.log
grep -h "conv/" $O/f32.log | awk -F'|' '{printf "%s|%s|%s|%s|%s|%s\n",$2,$4,$6,$7,$8,$9}'
grep -h "SUMMARY\|test result" $O/san-*.log
cat $O/times.txt
tar czf $OUT/k.tgz -C $OUT k
