#!/usr/bin/env bash
# Every config of the sm_90a conv kernel on ResNet-50's layers that the automatic choice ran
# slowest (H100, 2026-11-24): which tile and split wins where. Logs in $OUT/conv-sweep.txt.
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
for shape in 32,512,14,14,512,3,3,2,1 32,512,7,7,512,3,3,1,1 32,64,56,56,64,3,3,1,1 \
             32,128,28,28,128,3,3,1,1 32,1024,14,14,512,1,1,1,0 32,256,14,14,256,3,3,1,1; do
  for cfg in 128x128pp 128x256 128x192pp 128x128 64x128pp 128x128ppc2; do
    bin/zoo conv --shape $shape --config $cfg --iters 30 --json - 2>/dev/null | python3 -c "
import json, sys; r = json.load(sys.stdin)['results'][0]
print(f\"{'$shape':28s} {r['config']:12s} {r['median_ms']*1e3:8.1f} us  {r['pct_of_cudnn']:6.1f}% of cuDNN  ok={r['verify']['ok']}\")"
  done
done 2>&1 | tee "$OUT/conv-sweep.txt"
