# Session 5, run 8: is a CTA's per-K-tile cost (~480 cycles whatever the bytes) the consumer's
# loop? The consumers take K-tiles in groups (probes/kt-group.diff, as probe_pair/ with 2 and
# probe_pair4/ with 4 K-tiles per commit group: wait for the group's stages, issue all their
# wgmmas, wait for the group before, release its stages) against the kernel.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P2="@probe_pair/gemm_tma_wgmma.cu"; P4="@probe_pair4/gemm_tma_wgmma.cu"
P() { python3 scripts/variant_probe.py --idle "$@" 2>&1 | grep -v -i warn | tee -a "$OUT/kt-group.txt"; }
PROBE_VARIANTS="16x128s/1;16x128s/1$P2;16x128s/1$P4;16x128s/2;16x128s/2$P2;16x128s/2$P4" \
  P 1x4096x4096 1x4096x8192 16x4096x4096 1x11008x4096 --json "$OUT/kt-skinny.json"
PROBE_VARIANTS="64x64pp;64x64pp$P2;64x64pp$P4" P 64x4096x4096 128x4096x4096 512x512x512 256x256x256 --json "$OUT/kt-narrow.json"
PROBE_VARIANTS="64x128pp;64x128pp$P2;64x128ppc2;64x128ppc2$P2" P 1024x1024x1024 1000x1000x1000 --json "$OUT/kt-small.json"
PROBE_VARIANTS="128x256;128x256$P2;128x192ppc2;128x192ppc2$P2" P 4096x4096x4096 3000x3000x3000 --json "$OUT/kt-large.json"
