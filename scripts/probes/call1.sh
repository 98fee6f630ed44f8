#!/bin/bash
# Call 1 (one H200): the two-box B probe at 128 rows (d27c0d8's d96.sh on one GPU, alternating),
# then the GPU tests of the FP8 Linear in models and the FP8 suites.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=200
W=/tmp/w/c1; mkdir -p $W
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
for t in A B; do mkdir -p /tmp/t$t; tar --exclude=./.git --exclude=./.venv -cf - . | tar -xf - -C /tmp/t$t; done
sed -i 's/^import contextlib$/import contextlib\nimport os/; s/cfg.threads, cfg.cluster_size, args, split_k/cfg.threads, 1 if os.environ.get("ZOO_NO_CLUSTER_LAUNCH") else cfg.cluster_size, args, split_k/' /tmp/tA/zoo/gemm.py
grep -c ZOO_NO_CLUSTER_LAUNCH /tmp/tA/zoo/gemm.py
cp .devrun/pairs/gemm_tma_wgmma.cu /tmp/tA/kernels/sm90/; cp .devrun/pairs/sm90_scaled_fp8.yaml /tmp/tA/configs/
S=128x4096x4096,128x4096x11008,128x11008x4096
for r in 1 2 3; do for v in split one; do
  if [ $v = split ]; then (cd /tmp/tA; ZOO_NO_CLUSTER_LAUNCH=1 PYTHONPATH=/tmp/tA ZOO_CACHE_DIR=/tmp/zc-A timeout 90 python3 -m zoo bench --dtype fp8 --shapes $S --config 32x128spc2 --json $W/split-$r.json > $W/split-$r.txt 2>&1)
  else (cd /tmp/tB; PYTHONPATH=/tmp/tB ZOO_CACHE_DIR=/tmp/zc-B timeout 90 python3 -m zoo bench --dtype fp8 --shapes $S --config 32x128sp --json $W/one-$r.json > $W/one-$r.txt 2>&1); fi
  el "$v $r rc $?"; done; done
python3 - <<'P'
import json, glob, os, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/w/c1/*.json')):
    v, r = os.path.basename(f)[:-5].split('-')
    for x in json.load(open(f))['results']:
        d[(x['m'], x['n'], x['k'], v)].append((round(x['pct_of_torch'] or 0, 1), x['verified']))
for k in sorted(d): print(k, d[k])
P
el "probe done"
timeout 330 python3 -m pytest -m gpu -q -rs tests/test_gpu_models.py -k fp8 > $W/tests-fp8-models.txt 2>&1; el "fp8 model tests rc $?"
tail -15 $W/tests-fp8-models.txt
timeout 150 python3 -m pytest -m gpu -q tests/test_fp8.py tests/test_scaled.py > $W/tests-scaled.txt 2>&1; el "scaled tests rc $?"
tail -4 $W/tests-scaled.txt
tar czf $OUT/c1.tgz -C /tmp/w c1
