#!/bin/bash
# Call 2 (x2), seventeenth session. GPU0: 64x64sp / 32x128sp9 forced at small M, per tensor.
# GPU1: ncu of 128x128p, 128x128pc2 and torch at 4096^3 per tensor; 32x128sp, 64x64sp and torch at 128x4096x4096.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=200
W=/tmp/w/d85; mkdir -p $W
pack() { tar czf $OUT/d85.tgz -C /tmp/w d85; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S=128x4096x4096,128x11008x4096,128x4096x11008,64x4096x4096,64x4096x11008,256x4096x4096,64x11008x4096
( export CUDA_VISIBLE_DEVICES=0 ZOO_CACHE_DIR=/tmp/zc0
  for c in 64x64sp 32x128sp9 32x128sp auto 64x64sp 32x128sp9; do
    a=""; [ $c != auto ] && a="--config $c"
    timeout 100 python3 -m zoo bench --dtype fp8 --recipe tensor --shapes $S $a --json $W/t-$c-$SECONDS.json > $W/t-$c-$SECONDS.txt 2>&1; el "tensor $c rc $?"
  done
  timeout 100 python3 -m zoo bench --dtype fp8 --recipe row --shapes $S --config 64x64sp --json $W/r-64x64sp.json > $W/r-64x64sp.txt 2>&1; el "row 64x64sp rc $?"
  ) > $W/g0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 ZOO_CACHE_DIR=/tmp/zc1
  SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats"
  for x in "4096x4096x4096 zoo tensor 128x128p" "4096x4096x4096 zoo tensor 128x128pc2" "4096x4096x4096 torch tensor" \
           "128x4096x4096 zoo tensor 32x128sp" "128x4096x4096 zoo tensor 64x64sp" "128x4096x4096 torch tensor"; do
    set -- $x; f=$W/ncu-$1-$2-$3-${4:-}.txt
    python3 .devrun/fp8_ncu.py $x > /dev/null 2>&1  # compile first, outside ncu
    timeout 150 $NCU --clock-control none --launch-skip 2 --launch-count 1 $SEC python3 .devrun/fp8_ncu.py $x > $f 2>&1; el "ncu $x rc $?"
  done ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log
python3 - <<'P'
import json, glob, os
rows = {}
for f in sorted(glob.glob('/tmp/w/d85/[tr]-*.json'), key=os.path.getmtime):
    d = json.load(open(f)); tag = os.path.basename(f)[:-5]
    for x in d['results']:
        rows.setdefault((tag[0], x['m'], x['n'], x['k']), []).append((tag[2:], x['config'], x['median_ms'], x['torch_median_ms'], x['pct_of_torch'], x['verified']))
for key, v in sorted(rows.items()):
    print(key, '  '.join(f"{c}:{(ms or 0)*1e3:.2f}/{(t or 0)*1e3:.2f}={p or 0:.1f}{'' if ok else '!'}" for tag, c, ms, t, p, ok in v))
P
for f in $W/ncu-*.txt; do echo "== $f"; grep -E 'Elapsed Cycles|SM Active Cycles|Duration|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|No Eligible|Stall|Grid Size|Cluster|Waves' $f | head -30; done
el done
