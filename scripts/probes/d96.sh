#!/bin/bash
# Call 13 (x2): does loading B's 128 rows as two 64-row TMA boxes speed the small-M swap tiles? On each GPU,
# alternating: pairs.cu + 32x128spc2 launched without clusters (two boxes; "split") against the kept
# kernel's 32x128sp ("one"), the same tiles and order otherwise.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/d96; mkdir -p $W
pack() { tar czf $OUT/d96.tgz -C /tmp/w d96; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
sed -i 's/^import contextlib$/import contextlib\nimport os/; s/cfg.threads, cfg.cluster_size, args, split_k/cfg.threads, 1 if os.environ.get("ZOO_NO_CLUSTER_LAUNCH") else cfg.cluster_size, args, split_k/' /tmp/tA/zoo/gemm.py
cp /tmp/tA/.devrun/v/pairs.cu /tmp/tA/kernels/sm90/gemm_tma_wgmma.cu
S=128x4096x4096,128x4096x11008,128x11008x4096
run() { local g=$1; shift; export CUDA_VISIBLE_DEVICES=$g
  for r in 1 2; do for v in "$@"; do
    if [ $v = split ]; then (cd /tmp/tA; ZOO_NO_CLUSTER_LAUNCH=1 PYTHONPATH=/tmp/tA ZOO_CACHE_DIR=/tmp/zc-A$g timeout 60 python3 -m zoo bench --dtype fp8 --shapes $S --config 32x128spc2 --json $W/g$g-split-$r.json > /dev/null 2>&1)
    else (cd /tmp/tB; PYTHONPATH=/tmp/tB ZOO_CACHE_DIR=/tmp/zc-B$g timeout 60 python3 -m zoo bench --dtype fp8 --shapes $S --config 32x128sp --json $W/g$g-one-$r.json > /dev/null 2>&1); fi
    el "g$g $v $r rc $?"; done; done; }
( run 1 split one ) > $W/A.log 2>&1 &
( run 0 one split ) > $W/B.log 2>&1 &
wait
cat $W/A.log $W/B.log
python3 - <<'P'
import json, glob, os, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/w/d96/*.json')):
    g, v, r = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        d[(x['m'], x['n'], x['k'], g, v)].append((round(x['pct_of_torch'] or 0, 1), x['verified']))
for k in sorted(d): print(k, d[k])
P
el done
