#!/usr/bin/env bash
# K-split (ksplit: 1): a ping-pong CTA whose only unit is one tile gives its two consumers the
# K-tiles in turn, against the same configs without it and torch.mm (variant_probe --idle).
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zc} PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
PROBE_VARIANTS="64x64pp;64x64pp:ksplit=1;64x128pp;64x128pp:ksplit=1;64x64pp:ksplit=1/2" \
  python3 scripts/variant_probe.py 64x4096x4096 64x4096x11008 128x4096x4096 128x4096x11008 64x11008x4096 --idle --json "$OUT/ksplit-skinny.json" 2>&1 | grep -v -i warn
PROBE_VARIANTS="128x128;64x128pp;64x128pp:ksplit=1" \
  python3 scripts/variant_probe.py 128x11008x4096 --idle --json "$OUT/ksplit-128x11008.json" 2>&1 | grep -v -i warn
PROBE_VARIANTS="64x64pp;64x64pp:ksplit=1;64x128pp;64x128pp:ksplit=1;64x128ppc2;64x128ppc2:ksplit=1" \
  python3 scripts/variant_probe.py 256x256x256 512x512x512 768x768x768 1024x1024x1024 1000x1000x1000 2048x1024x1024 --idle --json "$OUT/ksplit-small.json" 2>&1 | grep -v -i warn
} | tee "$OUT/ksplit-scan.txt"
