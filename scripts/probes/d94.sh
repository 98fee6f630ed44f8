#!/bin/bash
# Call 11 (x2): 2-CTA clusters without multicast (nomc.cu: each CTA loads its whole B, its ring its own)
# on GPU1, against the kept kernel's multicast twins on GPU0; 3af6068's configs in the tree.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/d94; mkdir -p $W
pack() { tar czf $OUT/d94.tgz -C /tmp/w d94; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
run() { local d=$1 g=$2 v=$3; cd /tmp/t$d; export CUDA_VISIBLE_DEVICES=$g PYTHONPATH=/tmp/t$d ZOO_CACHE_DIR=/tmp/zc-$d
  cp .devrun/v/$v.cu kernels/sm90/gemm_tma_wgmma.cu
  for round in 1 2; do
    for c in 128x128pc2 128x128p; do timeout 60 python3 -m zoo bench --dtype fp8 --shapes 4096x4096x4096,1024x4096x4096,4096x4096x11008 --config $c --json $W/$v-$c-$round.json > /dev/null 2>&1; el "$v $c $round rc $?"; done
    for c in 32x128spc2 32x128sp; do timeout 60 python3 -m zoo bench --dtype fp8 --shapes 128x4096x4096,128x4096x11008 --config $c --json $W/$v-$c-$round.json > /dev/null 2>&1; el "$v $c $round rc $?"; done
  done; }
( run A 1 nomc ) > $W/A.log 2>&1 &
( run B 0 kept17b ) > $W/B.log 2>&1 &
wait
cat $W/A.log $W/B.log
python3 - <<'P'
import json, glob, os, statistics as st, collections
d = collections.defaultdict(list)
for f in glob.glob('/tmp/w/d94/*.json'):
    v, c, rnd = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        d[(x['m'], x['n'], x['k'], v, c)].append((round(x['pct_of_torch'] or 0, 1), x['verified']))
for k in sorted(d): print(k, d[k])
P
el done
