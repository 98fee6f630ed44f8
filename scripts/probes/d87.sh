#!/bin/bash
# Call 4 (x2): per-row scales held in registers (hold.cu) against the kept kernel (kept16.cu).
# GPU1: test_scaled on hold, then A/B rounds (hold first); GPU0: A/B rounds (kept first).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/d87; mkdir -p $W
pack() { tar czf $OUT/d87.tgz -C /tmp/w d87; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
ab() {  # dir gpu order...
  local d=$1 g=$2; shift 2
  cd /tmp/t$d; export CUDA_VISIBLE_DEVICES=$g PYTHONPATH=/tmp/t$d ZOO_CACHE_DIR=/tmp/zc-$d; K=kernels/sm90/gemm_tma_wgmma.cu
  S=$(date +%s); left() { echo $(( 300 - ($(date +%s) - S) )); }
  if [ $d = A ]; then cp .devrun/v/hold.cu $K
    timeout 100 python3 -m pytest -q -m gpu tests/test_scaled.py > $W/tests-scaled-hold.txt 2>&1; echo "A scaled: $(tail -1 $W/tests-scaled-hold.txt)"; fi
  for round in 1 2 3; do for v in "$@"; do for r in row tensor; do
    [ $(left) -lt 15 ] && break 3
    cp .devrun/v/$v.cu $K
    timeout $(left) python3 -m zoo bench --dtype fp8 --recipe $r --suite llm --shapes 4096x4096x4096,1024x4096x4096,4096x4096x11008,2048x2048x2048,8192x8192x8192,4096x11008x4096 --json $W/$d-$r-$v-$round.json > $W/$d-$r-$v-$round.txt 2>&1 || echo "$d FAIL $v $r $round"
    echo "$d $v $r $round: $(grep -E "geometric" $W/$d-$r-$v-$round.txt | cut -c1-12,150-175 | head -1)"
  done; done; done; }
( ab A 1 hold kept16 ) > $W/A.log 2>&1 &
( ab B 0 kept16 hold ) > $W/B.log 2>&1 &
wait
cat $W/A.log $W/B.log
python3 - <<'P'
import json, glob, os, statistics as st, collections
d = collections.defaultdict(list)
for f in glob.glob('/tmp/w/d87/[AB]-*.json'):
    g, r, v, rnd = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        if x['pct_of_torch']: d[(r, x['m'], x['n'], x['k'], v)].append(round(x['pct_of_torch'], 1))
keys = sorted({k[:4] for k in d})
for k in keys:
    h, kp = d.get(k + ('hold',), []), d.get(k + ('kept16',), [])
    print(k, 'hold', st.median(h) if h else '-', h, ' kept', st.median(kp) if kp else '-', kp)
P
el done
