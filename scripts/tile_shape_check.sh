#!/usr/bin/env bash
# 4096^3 and 3000^3 with cuBLAS's tile shape (256x128, A multicast in 1 x 2 clusters: what
# torch.mm runs at 4096^3 on the H100) against the zoo's, side by side with torch.mm, calls
# back to back and (--idle) as zoo bench times them. Seventh session.
#   bash scripts/tile_shape_check.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
wide="128x256:block_m=256,block_n=128,warp_m=128,warp_n=128,stream_k=0"
export PROBE_VARIANTS="128x256;128x256c2;$wide;$wide,cluster_n=2;128x192ppc2;128x192pp"
python3 scripts/variant_probe.py 4096x4096x4096 3000x3000x3000 --json "$OUT/tiles-sustained.json" 2>&1 | grep -v -i warn
python3 scripts/variant_probe.py 4096x4096x4096 3000x3000x3000 8192x8192x8192 --idle --json "$OUT/tiles-idle.json" 2>&1 | grep -v -i warn
