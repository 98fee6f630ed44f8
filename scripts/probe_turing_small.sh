#!/usr/bin/env bash
# Probes behind issues 18 and 21 (H100/H200, ~6 minutes): the two Turing kernels at 4096^3
# fp16 -> fp32 with every config of sm75_hgemm_mma (2 and 3 stages), ncu stall reasons for the
# mma kernel and its WMMA sibling, the kernels cuBLAS and the zoo run for the small and skinny
# shapes with their device times, host cost per call, and zoo batched. Logs in $OUT.
#   bash scripts/probe_turing_small.sh   (TURING_ONLY=1: the Turing part; MMA_CONFIGS, NCU_RUNS=kernel:config ...: what it runs)
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
OUT=${OUT:-/tmp/zoo-out}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S="-m 4096 -n 4096 -k 4096 --iters 30 --out-dtype fp32"
{
  bin/zoo run --kernel sm75_hgemm_wmma $S 2>&1 | grep -E "^│ sm|^│ torch"
  for c in ${MMA_CONFIGS:-128x128 128x256 128x128s3 128x256s3 256x128s3}; do
    bin/zoo run --kernel sm75_hgemm_mma --config $c $S 2>&1 | grep -E "^│ sm"
  done
} | tee "$OUT/turing.txt"
NCU_METRICS=smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,smsp__average_warp_latency_issue_stalled_selected.ratio,smsp__average_warp_latency_issue_stalled_dispatch_stall.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum
for kc in ${NCU_RUNS:-sm75_hgemm_mma:128x128 sm75_hgemm_mma:128x256s3 sm75_hgemm_wmma:128x128}; do
  set -- ${kc/:/ }
  timeout 120 ncu --clock-control none --kernel-name regex:zoo_ --launch-skip 1 --launch-count 1 \
    --metrics "$NCU_METRICS" python3 scripts/ncu_probe.py 4096 $1 $2 fp32 > "$OUT/ncu-$1-$2.txt" 2>&1
  echo "== ncu $1 / $2 (4096^3 fp16->fp32): stall cycles per issued instruction"
  grep -E "stalled|hmma|issue_active|per_second|duration" "$OUT/ncu-$1-$2.txt" | sed 's/smsp__average_warp_latency_issue_//'
done
[ -n "${TURING_ONLY:-}" ] && exit 0
timeout 150 python3 scripts/kernel_names.py 2>&1 | tee "$OUT/kernel-names.txt"
timeout 150 python3 scripts/host_cost.py 2>&1 | tee "$OUT/host-cost.txt"
timeout 90 bin/zoo batched --mode streams --json "$OUT/batched-streams.json" 2>&1 | tail -8
