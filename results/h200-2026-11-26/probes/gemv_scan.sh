#!/usr/bin/env bash
# The streaming kernel (kernels/sm75/gemv_stream.cu) against the sm90 kernel's skinny choice
# (16x128s) and torch.mm: variants of its configs at M = 1-16, graph replays, inputs out of
# L2, the GPU idle before each call; then its GPU tests and the skinny suite.
#   bash results/h200-2026-11-26/probes/gemv_scan.sh   (from the repository root)
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
python3 -m pytest -q -m gpu tests/test_gemv.py 2>&1 | tail -4
G=sm75_gemv_stream
PROBE_VARIANTS="16x128s;$G+1x256;$G+1x256:stages=16;$G+1x256:threads=512;$G+1x256:stages=4;$G+1x256:block_k=256" \
  python3 scripts/variant_probe.py 1x4096x4096 1x11008x4096 1x4096x11008 1x4096x1024 1x1024x4096 1x8192x8192 --idle --json "$OUT/m1.json"
PROBE_VARIANTS="16x128s;$G+2x256;$G+4x256;$G+8x256;$G+8x256:stages=8" \
  python3 scripts/variant_probe.py 2x4096x4096 4x4096x4096 8x4096x4096 8x11008x4096 4x4096x11008 --idle --json "$OUT/m2-8.json"
PROBE_VARIANTS="16x128s;$G+8x256;$G+8x256:stages=8" \
  python3 scripts/variant_probe.py 16x4096x4096 16x11008x4096 --idle --json "$OUT/m16.json"
bin/zoo bench --suite skinny --json "$OUT/bench-skinny.json" 2>&1 | grep -E "^│|geometric"
python3 -m pytest -q -m gpu tests/test_gpu.py -k gemv 2>&1 | tail -4
