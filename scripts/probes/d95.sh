#!/bin/bash
# Call 12 (x2): where the 2-CTA clusters lose. GPU1: pairs.cu (the no-multicast kernel scheduling
# pairs of blocks from blockIdx, no cluster barriers) launched without (nolaunch) and with (launch)
# the cluster attribute. GPU0: nomc.cu in clusters (as call 11) and the plain tiles.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/d95; mkdir -p $W
pack() { tar czf $OUT/d95.tgz -C /tmp/w d95; }
trap pack EXIT
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
sed -i 's/^import contextlib$/import contextlib\nimport os/; s/cfg.threads, cfg.cluster_size, args, split_k/cfg.threads, 1 if os.environ.get("ZOO_NO_CLUSTER_LAUNCH") else cfg.cluster_size, args, split_k/' /tmp/tA/zoo/gemm.py
grep -c ZOO_NO_CLUSTER_LAUNCH /tmp/tA/zoo/gemm.py
cp /tmp/tA/.devrun/v/pairs.cu /tmp/tA/kernels/sm90/gemm_tma_wgmma.cu
cp /tmp/tB/.devrun/v/nomc.cu /tmp/tB/kernels/sm90/gemm_tma_wgmma.cu
b() { timeout 60 python3 -m zoo bench --dtype fp8 --shapes $2 --config $1 --json $W/$3.json > /dev/null 2>&1; el "$3 rc $?"; }
( cd /tmp/tA; export CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/tmp/tA ZOO_CACHE_DIR=/tmp/zc-A
  for r in 1 2; do
    ZOO_NO_CLUSTER_LAUNCH=1 b 128x128pc2 4096x4096x4096,1024x4096x4096 pairs-nolaunch-128-$r
    b 128x128pc2 4096x4096x4096,1024x4096x4096 pairs-launch-128-$r
    ZOO_NO_CLUSTER_LAUNCH=1 b 32x128spc2 128x4096x4096 pairs-nolaunch-32-$r
    b 32x128spc2 128x4096x4096 pairs-launch-32-$r
  done ) > $W/A.log 2>&1 &
( cd /tmp/tB; export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/tB ZOO_CACHE_DIR=/tmp/zc-B
  for r in 1 2; do
    b 128x128pc2 4096x4096x4096,1024x4096x4096 nomc-cluster-128-$r
    b 128x128p 4096x4096x4096,1024x4096x4096 plain-128-$r
    b 32x128spc2 128x4096x4096 nomc-cluster-32-$r
    b 32x128sp 128x4096x4096 plain-32-$r
  done ) > $W/B.log 2>&1 &
wait
cat $W/A.log $W/B.log
python3 - <<'P'
import json, glob, os, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/w/d95/*.json')):
    tag = os.path.basename(f)[:-5].rsplit('-', 2)[0]
    for x in json.load(open(f))['results']:
        d[(x['m'], x['n'], x['k'], tag)].append((round(x['pct_of_torch'] or 0, 1), x['verified'], x['config']))
for k in sorted(d): print(k, d[k])
P
el done
