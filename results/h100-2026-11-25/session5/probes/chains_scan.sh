# Session 5, run 1: is one CTA's streaming rate (~78 GB/s, ~480 cycles a K-tile whatever its
# bytes: NOTES "The split-K tail") the latency of a K-tile's dependent wgmmas? The kernel with
# accumulator chains (probe_new/: the eighth session's probes/accumulator-chains.diff applied
# to this tree: the K steps of a K-tile go round up to 4 sets of accumulators) against this
# tree, on per-CTA-bound launches (few CTAs, deep K) and on the small squares.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
C="@probe_new/gemm_tma_wgmma.cu"
P() { python3 scripts/variant_probe.py --idle "$@" 2>&1 | grep -v -i warn | tee -a "$OUT/scan.txt"; }
PROBE_VARIANTS="16x128s/1;16x128s/1$C;16x128s/2;16x128s/2$C;16x128s/4$C;16x128s:stages=10/1$C;16x128s:stages=10/2$C" \
  P 1x4096x4096 1x4096x8192 16x4096x4096 1x11008x4096 16x4096x11008 --json "$OUT/skinny.json"
PROBE_VARIANTS="64x64pp/1;64x64pp/1$C;64x128pp;64x128pp$C;32x64s;32x64s$C" \
  P 64x4096x4096 128x4096x4096 64x4096x11008 --json "$OUT/m64.json"
PROBE_VARIANTS="32x64s;32x64s$C;64x64pp;64x64pp$C;64x128pp;64x128pp$C;64x128ppc2;64x128ppc2$C;16x128s;16x128s$C" \
  P 256x256x256 384x384x384 512x512x512 768x768x768 1000x1000x1000 1024x1024x1024 --json "$OUT/squares.json"
