#!/bin/bash
# Call 9 (x2): ncu source counters of 128x128pb (blockwise) at 4096^3, and torch's blockwise kernel (speed of light, stall samples).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=250
W=/tmp/w/d92; mkdir -p $W
pack() { tar czf $OUT/d92.tgz -C /tmp/w d92; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section WarpStateStats --section SourceCounters --metrics regex:^smsp__pcsamp_warps_issue_stalled_"
( export CUDA_VISIBLE_DEVICES=0 ZOO_CACHE_DIR=/tmp/zc0; x="4096x4096x4096 zoo block 128x128pb"
  python3 .devrun/fp8_ncu.py $x > /dev/null 2>&1
  timeout 200 $NCU --clock-control none -k regex:"zoo_scaled" --launch-skip 2 --launch-count 1 $SEC --print-source sass --page source --csv python3 .devrun/fp8_ncu.py $x > $W/ncu-pb-source.csv 2>&1; el "src rc $?"
  timeout 200 $NCU --clock-control none -k regex:"zoo_scaled" --launch-skip 2 --launch-count 1 $SEC python3 .devrun/fp8_ncu.py $x > $W/ncu-pb.txt 2>&1; el "ncu rc $?" ) > $W/g0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 ZOO_CACHE_DIR=/tmp/zc1; x="4096x4096x4096 torch block"
  python3 .devrun/fp8_ncu.py $x > /dev/null 2>&1
  timeout 200 $NCU --clock-control none -k regex:"nvjet" --launch-skip 2 --launch-count 1 $SEC python3 .devrun/fp8_ncu.py $x > $W/ncu-torch-block.txt 2>&1; el "torch rc $?" ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log
for f in $W/ncu-pb.txt $W/ncu-torch-block.txt; do echo "== $f"; grep -E 'Duration|Elapsed Cycles|SM Active' $f; done
el done
