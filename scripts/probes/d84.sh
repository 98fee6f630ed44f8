#!/bin/bash
# Call 1 (x2), seventeenth session. GPU1: test_scaled (the early-issue test's first run), torch's kernels.
# GPU0: swap tiles in clusters along M (staged configs), per tensor, forced, small M.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD COLUMNS=200
W=/tmp/w/d84; mkdir -p $W
pack() { tar czf $OUT/d84.tgz -C /tmp/w d84; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
S=128x4096x4096,128x11008x4096,128x4096x11008,64x4096x4096,64x4096x11008,256x4096x4096,64x11008x4096
( export CUDA_VISIBLE_DEVICES=0 ZOO_CACHE_DIR=/tmp/zc0
  for c in 32x128sp 32x128spc2 32x128spc4 64x128sp 64x128spc2 16x128sp 16x128spc4 128x128p; do
    timeout 100 python3 -m zoo bench --dtype fp8 --recipe tensor --shapes $S --config $c --json $W/t-$c.json > $W/t-$c.txt 2>&1; el "tensor $c rc $?"
  done
  for c in 32x128spc4 64x128spc2 16x128spc4; do
    timeout 100 python3 -m zoo bench --dtype fp8 --recipe row --shapes $S --config $c --json $W/r-$c.json > $W/r-$c.txt 2>&1; el "row $c rc $?"
  done ) > $W/g0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1 ZOO_CACHE_DIR=/tmp/zc1
  timeout 120 python3 -m pytest -q -m gpu tests/test_scaled.py > $W/tests-scaled.txt 2>&1; el "scaled: $(tail -1 $W/tests-scaled.txt)"
  timeout 120 python3 .devrun/kernels_of_torch.py $S,1024x4096x4096,4096x4096x4096,16x4096x4096 tensor,row,block > $W/torch-kernels.txt 2>&1; el "kernels rc $?"
  timeout 100 python3 -m zoo bench --dtype fp8 --recipe tensor --shapes $S --json $W/t-auto.json > $W/t-auto.txt 2>&1; el "auto rc $?"
  ) > $W/g1.log 2>&1 &
wait
cat $W/g0.log $W/g1.log
grep -E 'failed|passed' $W/tests-scaled.txt | tail -3
python3 - <<'P'
import json, glob, os
rows = {}
for f in sorted(glob.glob('/tmp/w/d84/[tr]-*.json')):
    d = json.load(open(f)); tag = os.path.basename(f)[:-5]
    for x in d['results']:
        rows.setdefault((tag[0], x['m'], x['n'], x['k']), []).append((tag[2:], x['median_ms'], x['torch_median_ms'], x['pct_of_torch'], x['verified']))
for key, v in sorted(rows.items()):
    print(key, '  '.join(f"{c}:{(ms or 0)*1e3:.2f}/{(t or 0)*1e3:.2f}={p or 0:.1f}{'' if ok else '!'}" for c, ms, t, p, ok in v))
P
cat $W/torch-kernels.txt | cut -c1-200
el done
