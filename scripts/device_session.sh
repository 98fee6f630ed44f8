#!/usr/bin/env bash
# One device call: facts, smoke checks, benchmarks of every config. Logs under $OUT.
set -u
export PYTHONPATH=$PWD ZOO_CACHE_DIR=/tmp/zoo-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
python3 -c "import torch, cuda.bindings; print('torch', torch.__version__, torch.version.cuda, 'cuda-bindings', cuda.bindings.__version__)"
python3 -m zoo info
python3 scripts/device_smoke.py
for od in fp16 fp32; do for cfg in 128x128 128x256 64x64; do
  python3 -m zoo run --auto-arch --config $cfg --out-dtype $od --json $OUT/run-$cfg-$od.json 2>&1 | tail -6
done; done
