#!/bin/bash
# Call 3: ncu (kernel filtered this time) of 128x128p, 128x128pc2, torch at 4096^3 per tensor; per row 128x128p vs torch;
# 32x128sp vs torch at 128x4096x4096. Two GPUs: two queues.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=200
W=/tmp/w/d86; mkdir -p $W
pack() { tar czf $OUT/d86.tgz -C /tmp/w d86; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --metrics regex:^smsp__pcsamp_warps_issue_stalled_"
q() { for x in "$@"; do
    set -- $x; f=$W/ncu-$1-$2-$3-${4:-}.txt
    python3 .devrun/fp8_ncu.py $x > /dev/null 2>&1
    timeout 150 $NCU --clock-control none -k regex:"zoo_scaled|nvjet|cutlass|sm90" --launch-skip 2 --launch-count 1 $SEC python3 .devrun/fp8_ncu.py $x > $f 2>&1; el "ncu $x rc $?"
  done; }
( export CUDA_VISIBLE_DEVICES=0 ZOO_CACHE_DIR=/tmp/zc0
  q "4096x4096x4096 zoo tensor 128x128p" "4096x4096x4096 zoo tensor 128x128pc2" "4096x4096x4096 torch tensor" ) > $W/g0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 ZOO_CACHE_DIR=/tmp/zc1
  q "4096x4096x4096 zoo row 128x128p" "4096x4096x4096 torch row" "128x4096x4096 zoo tensor 32x128sp" "128x4096x4096 torch tensor" ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log
for f in $W/ncu-*.txt; do echo "== $f"; grep -E 'zoo_scaled|nvjet|Elapsed Cycles|SM Active Cycles|Duration|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|No Eligible|Grid Size|Cluster Size|Max Active Clusters' $f | head -14;
  grep -E 'pcsamp_warps_issue_stalled' $f | awk '{print $1, $NF}' | sort -k2 -n -r | head -8; done
el done
