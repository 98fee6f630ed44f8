#!/usr/bin/env bash
# Clusters along N (A multicast to the CTAs of a tile row) and along M on the suites' weakest
# shapes, side by side with the registry's choice and torch.mm (variant_probe --idle).
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zc} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
probe() {  # name "variants" shapes...
  local name=$1 variants=$2; shift 2
  PROBE_VARIANTS="$variants" python3 scripts/variant_probe.py "$@" --idle --json "$OUT/$name.json" 2>&1 | grep -v -i warn
}
{
probe m64 "64x64pp;64x64pp:cluster_n=2;64x64pp:cluster_n=4;64x128pp:cluster_n=2;64x64s:cluster_n=2;32x128s:cluster_m=2" \
  64x4096x4096 64x4096x11008 64x11008x4096
probe m128 "64x64pp;64x64pp:cluster_n=2;128x128;128x128:cluster_n=2;64x128pp;64x128pp:cluster_n=2" \
  128x4096x11008 128x11008x4096 128x4096x4096
probe m16 "16x128s;16x128s:cluster_n=2;16x128s:cluster_m=2;16x128s:cluster_m=4" \
  1x4096x4096 16x4096x4096 16x4096x11008 1x11008x4096
probe small "64x128pp;64x128ppc2;64x128pp:cluster_n=2;64x128pp:cluster_m=2,cluster_n=2;64x64pp;64x64pp:cluster_n=2" \
  1000x1000x1000 1024x1024x1024 512x512x512
probe big "128x192ppc2;128x192pp:cluster_m=2,cluster_n=2;128x256c2;128x256:cluster_n=2;128x256" 3000x3000x3000 4096x4096x4096
} | tee "$OUT/cluster-scan.txt"
