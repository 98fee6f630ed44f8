#!/usr/bin/env bash
# Second look at the streaming kernel (its first round of B loads before A's staging, rounds
# double-buffered in registers, one wave of blocks) against 16x128s and torch.mm at M = 1-2,
# then the whole GPU suite.   bash results/h200-2026-11-26/probes/gemv_scan2.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
G=sm75_gemv_stream
PROBE_VARIANTS="16x128s;$G+1x256;$G+1x256:stages=4;$G+1x256:threads=512,stages=4;$G+1x256:threads=128" \
  python3 scripts/variant_probe.py 1x4096x4096 1x11008x4096 1x4096x11008 1x4096x1024 1x8192x8192 --idle --json "$OUT/m1.json"
PROBE_VARIANTS="16x128s;$G+2x256;$G+2x256:stages=4" \
  python3 scripts/variant_probe.py 2x4096x4096 2x11008x4096 --idle --json "$OUT/m2.json"
timeout 480 bin/test -m gpu -q -x 2>&1 | tail -15
