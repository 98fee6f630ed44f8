#!/bin/bash
# Call 8 (x2): ncu source counters (stall samples by SASS line) of 128x128p and its 2x1 twin at 4096^3 per tensor,
# and of 32x128sp and 32x128spc2 at 128x4096x4096.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=250
W=/tmp/w/d91; mkdir -p $W
pack() { tar czf $OUT/d91.tgz -C /tmp/w d91; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section WarpStateStats --section SourceCounters --metrics regex:^smsp__pcsamp_warps_issue_stalled_"
q() { for x in "$@"; do
    set -- $x; f=$W/ncu-$1-$2-$3-${4:-}
    python3 .devrun/fp8_ncu.py $x > /dev/null 2>&1
    timeout 200 $NCU --clock-control none -k regex:"zoo_scaled" --launch-skip 2 --launch-count 1 $SEC --print-source sass --page source --csv python3 .devrun/fp8_ncu.py $x > $f-source.csv 2>&1; el "src $x rc $?"
    timeout 200 $NCU --clock-control none -k regex:"zoo_scaled" --launch-skip 2 --launch-count 1 $SEC python3 .devrun/fp8_ncu.py $x > $f.txt 2>&1; el "ncu $x rc $?"
  done; }
( export CUDA_VISIBLE_DEVICES=0 ZOO_CACHE_DIR=/tmp/zc0; q "4096x4096x4096 zoo tensor 128x128p" "4096x4096x4096 zoo tensor 128x128pc2" ) > $W/g0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 ZOO_CACHE_DIR=/tmp/zc1; q "128x4096x4096 zoo tensor 32x128sp" "128x4096x4096 zoo tensor 32x128spc2" ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log; ls -la $W; head -c 1500 $W/ncu-4096x4096x4096-zoo-tensor-128x128p-source.csv
el done
