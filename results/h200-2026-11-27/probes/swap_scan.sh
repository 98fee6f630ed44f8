#!/usr/bin/env bash
# cuBLAS runs 64x4096x4096 as 128 CTAs of a swap-AB 64x32 tile (nvjet_sm90_hsh_64x32_64x16_1x2_h_bz_NNT,
# run2/kernel-names.txt): the zoo's swap tiles of the same count (32x64s, 128 tiles whole), with
# and without a 2-CTA cluster, against the registry's choice (variant_probe --idle).
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zc} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PROBE_VARIANTS="64x64pp;32x64s;32x64s/1;32x64s:cluster_n=2;32x64s:cluster_m=2;32x64s:stages=12;64x64s/1;32x128s/1;64x64pp/2" \
  python3 scripts/variant_probe.py 64x4096x4096 64x4096x11008 --idle --json "$OUT/swap-m64.json" 2>&1 | grep -v -i warn | tee "$OUT/swap-scan.txt"
PROBE_VARIANTS="64x64pp;64x64s;64x64s/2;32x128s/2;64x64pp/2;128x128" \
  python3 scripts/variant_probe.py 128x4096x11008 128x11008x4096 --idle --json "$OUT/swap-m128.json" 2>&1 | grep -v -i warn | tee -a "$OUT/swap-scan.txt"
