# Session 5, run 5: where split-K's ~2 us per launch goes. The same 16x128s launch whole, in 2
# and 4 slices as the kernel reduces them, and with parts of the reduction taken out (wrong
# results on purpose, marked WRONG; probes/split-cost-parts.diff): noreduce (slice 0 stores its
# own partial sum as C, the others exit at once), storeonly (every slice stores its partial,
# no count, no loads), noload (stored and counted, the others' partials not read).
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
V="16x128s/1;16x128s/2"
for p in noreduce storeonly noload; do V="$V;16x128s/2@probe_$p/gemm_tma_wgmma.cu"; done
V="$V;16x128s/4;16x128s/4@probe_noreduce/gemm_tma_wgmma.cu;16x128s/4@probe_noload/gemm_tma_wgmma.cu"
PROBE_VARIANTS="$V" python3 scripts/variant_probe.py --idle 1x4096x1024 1x4096x4096 16x4096x4096 1x4096x8192 \
  --json "$OUT/split-parts.json" 2>&1 | grep -v -i warn | tee "$OUT/split-parts.txt"
