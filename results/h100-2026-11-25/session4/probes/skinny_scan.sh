# Session 4, run 1: where skinny GEMMs with 4096-wide weights lose time (NOTES.md, "Skinny
# shapes: the split-K tail"). K scans at M = 1 (slope: streaming rate; intercept: fixed cost)
# for the registry's split and forced ones, 16x64 swap tiles (16x128s with block_n 64), and the
# split-K reduce with its loads gathered (this tree) against the kernel before (probe_old/: `mkdir probe_old && git show b68a3ca:kernels/sm90/gemm_tma_wgmma.cu > probe_old/gemm_tma_wgmma.cu`).
# Then ncu (caches flushed) on 1x4096x4096: torch against the zoo's variants.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S64="16x128s:block_n=64,warp_m=8,stages=16"
OLD="@probe_old/gemm_tma_wgmma.cu"
PROBE_VARIANTS="16x128s;16x128s$OLD;16x128s/1;16x128s/2;16x128s/8;$S64;$S64/1;$S64$OLD" \
  python3 scripts/variant_probe.py --idle 1x4096x1024 1x4096x2048 1x4096x4096 1x4096x8192 1x4096x16384 \
  16x4096x4096 --json "$OUT/scan-m1.json" 2>&1 | grep -v -i warn | tee "$OUT/scan.txt"
PROBE_VARIANTS="64x128pp;64x128pp$OLD;64x64pp/1;64x64pp/2;64x64pp/2$OLD;16x128s;32x64s;$S64" \
  python3 scripts/variant_probe.py --idle 64x4096x4096 64x4096x8192 --json "$OUT/scan-m64.json" 2>&1 \
  | grep -v -i warn | tee -a "$OUT/scan.txt"
NCU=$(which ncu || ls /usr/local/cuda*/bin/ncu | head -1)
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,launch__grid_size,sm__cycles_active.avg
for s in "torch" "16x128s 4" "16x128s 1" "64x64pp 1"; do
  echo "## 1x4096x4096 $s"
  $NCU --launch-skip 1 --launch-count 1 -k regex:'zoo_gemm|nvjet|gemv|gemm' --metrics $M \
    python3 scripts/skinny_ncu.py 1x4096x4096 $s 2>&1 | grep -E "^  [a-z]|Kernel|zoo_|nvjet|error" | head -12
done 2>&1 | tee "$OUT/ncu.txt"
