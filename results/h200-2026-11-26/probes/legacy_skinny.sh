#!/usr/bin/env bash
# The streaming kernel against the sm80 and sm75 kernels' choice for a few rows (64x64 tiles,
# no split-K), run on the lent Hopper GPU (no A100 or T4 at hand), and against 16x128s.
#   bash results/h200-2026-11-26/probes/legacy_skinny.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
G=sm75_gemv_stream
L="16x128s;sm80_gemm_mma+64x64;sm75_hgemm_wmma+64x64;sm75_hgemm_mma+64x64"
for m in 1 2 4 8; do
  rows=$(( m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8 ))
  PROBE_VARIANTS="$L;$G+${rows}x256" python3 scripts/variant_probe.py ${m}x4096x4096 ${m}x11008x4096 --idle --json "$OUT/legacy-m$m.json"
done
