# Session 5, run 2: grids that 64x128 tiles leave under half a wave, K too shallow to split
# (the registry took the swap tile of least wave cost, 32x64s at 256^3-512^3): the narrow
# 64x64pp against the swap tiles and 64x128pp, squares off the 64-row grid (8-element multiples: variant_probe builds TMA maps
# directly) and oblongs.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PROBE_VARIANTS="32x64s;64x64pp;64x128pp;16x128s" python3 scripts/variant_probe.py --idle \
  256x256x256 296x296x296 504x504x504 512x512x512 640x640x640 704x704x704 128x512x512 64x512x512 \
  1024x256x512 256x1024x256 2048x256x256 512x512x1000 1000x1000x1000 --json "$OUT/small-grids.json" 2>&1 | grep -v -i warn | tee "$OUT/small-grids.txt"
