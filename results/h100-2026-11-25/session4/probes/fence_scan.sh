# Session 4, run 2: split-K's count as one acq_rel atomic (no fence.sc.gpu + L1 invalidate on
# either side; this tree) against the kernel before the session (probe_old/: `mkdir probe_old && git show b68a3ca:kernels/sm90/gemm_tma_wgmma.cu > probe_old/gemm_tma_wgmma.cu`), K scans at M = 1,
# 16 and 64 with 4096-wide weights, forced splits and the registry's.
set -u
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OLD="@probe_old/gemm_tma_wgmma.cu"
PROBE_VARIANTS="16x128s/1;16x128s/2;16x128s/2$OLD;16x128s/4;16x128s/4$OLD;16x128s/8" \
  python3 scripts/variant_probe.py --idle 1x4096x1024 1x4096x4096 1x4096x8192 16x4096x4096 1x11008x4096 1x4096x11008 \
  --json "$OUT/fence-m1.json" 2>&1 | grep -v -i warn | tee "$OUT/fence.txt"
PROBE_VARIANTS="64x64pp/1;64x64pp/2;64x64pp/2$OLD;64x128pp/2;64x128pp/2$OLD;16x128s/1;32x64s/1" \
  python3 scripts/variant_probe.py --idle 64x4096x4096 64x4096x11008 64x11008x4096 128x4096x4096 \
  --json "$OUT/fence-m64.json" 2>&1 | grep -v -i warn | tee -a "$OUT/fence.txt"
