#!/bin/bash
# Call 10 (x2): two K-tiles issued early (early2t.cu) against the kept kernel (kept17.cu = 6e251f2).
# GPU1: test_scaled on hold, then A/B rounds (hold first); GPU0: A/B rounds (kept first).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/d93; mkdir -p $W
pack() { tar czf $OUT/d93.tgz -C /tmp/w d93; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
ab() {  # dir gpu order...
  local d=$1 g=$2; shift 2
  cd /tmp/t$d; export CUDA_VISIBLE_DEVICES=$g PYTHONPATH=/tmp/t$d ZOO_CACHE_DIR=/tmp/zc-$d; K=kernels/sm90/gemm_tma_wgmma.cu
  S=$(date +%s); left() { echo $(( 300 - ($(date +%s) - S) )); }
  if [ $d = A ]; then cp .devrun/v/early2t.cu $K
    timeout 100 python3 -m pytest -q -m gpu tests/test_scaled.py > $W/tests-scaled-early2t.txt 2>&1; echo "A scaled: $(tail -1 $W/tests-scaled-early2t.txt)"; fi
  for round in 1 2 3; do for vr in "$@"; do v=${vr%:*}; r=${vr#*:}
    [ $(left) -lt 20 ] && break 2
    cp .devrun/v/$v.cu $K
    timeout $(left) python3 -m zoo bench --dtype fp8 --recipe $r --shapes 4096x4096x4096,1024x4096x4096,2048x2048x2048,4096x4096x11008,1024x4096x11008,2048x8192x4096,3072x4096x4096,8192x8192x8192 --json $W/$d-$r-$v-$round.json > $W/$d-$r-$v-$round.txt 2>&1 || echo "$d FAIL $v $r $round"
    echo "$d $v $r $round: $(grep -E "geometric" $W/$d-$r-$v-$round.txt | cut -c1-12,150-175 | head -1)"
  done; done; }
( ab A 1 early2t:tensor kept17:tensor early2t:row kept17:row ) > $W/A.log 2>&1 &
( ab B 0 kept17:tensor early2t:tensor kept17:row early2t:row ) > $W/B.log 2>&1 &
wait
cat $W/A.log $W/B.log
python3 - <<'P'
import json, glob, os, statistics as st, collections
d = collections.defaultdict(list)
geo = collections.defaultdict(list)
for f in glob.glob('/tmp/w/d93/[AB]-*.json'):
    j = json.load(open(f)); g, r, v, rnd = os.path.basename(f)[:-5].split('-')
    for suite, val in (j.get('geomean_pct_of_torch') or {}).items(): geo[(r, suite, v)].append(round(val, 1))
    g, r, v, rnd = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        if x['pct_of_torch']: d[(r, x['m'], x['n'], x['k'], v)].append(round(x['pct_of_torch'], 1))
for k in sorted(geo): print('geomean', k, st.median(geo[k]), geo[k])
keys = sorted({k[:4] for k in d})
for k in keys:
    print(k, '  '.join(f"{v} {st.median(d[k + (v,)]):.1f} {d[k + (v,)]}" for v in ('early2t', 'kept17') if d.get(k + (v,))))
P
el done
