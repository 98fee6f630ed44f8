#!/bin/bash
set -u
export PYTHONPATH=.
W=/tmp/s24; mkdir -p $W; T0=$(date +%s)
log() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s" >> $W/log.txt; }
which ncu >> $W/log.txt 2>&1; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $W/log.txt
for r in 1 2; do for rec in tensor row block; do
  timeout 60 bin/zoo bench --dtype fp8 --recipe $rec --suite all --json $W/suite-$rec-$r.json > $W/suite-$rec-$r.txt 2>&1; log suite-$rec-$r $?
done; done
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
for s in 4096x4096x4096 1024x4096x11008 128x11008x4096; do for who in zoo torch; do
  timeout 90 ncu -k regex:"zoo_scaled|nvjet|cutlass|gemm|sm90" --launch-skip 2 --launch-count 1 $SECS python3 scripts/probes/s24_fp8_ncu.py $s $who tensor > $W/ncu-$s-$who.txt 2>&1; log ncu-$s-$who $?
done; done
tar czf $OUT/s24.tgz -C $W .
