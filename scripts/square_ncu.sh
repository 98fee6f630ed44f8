#!/usr/bin/env bash
# ncu on one 4096^3 launch of the zoo's 128x256 and of cuBLAS, at the clocks the GPU picks
# (--clock-control none, as zoo bench's idle-GPU timing sees them): time, SM clock, tensor pipe,
# L2 and DRAM traffic, and where the zoo's warps stall. Seventh session.
#   bash scripts/square_ncu.sh
set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=${ZOO_CACHE_DIR:-/tmp/zoo-cache}
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,launch__grid_size,launch__cluster_dim_y,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio
for who in "torch.mm x" "sm90_gemm_tma_wgmma 128x256" "sm90_gemm_tma_wgmma 128x192pp"; do
  echo "## 4096^3 $who"
  ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:'zoo_gemm|nvjet' --metrics $M --csv \
    python3 scripts/ncu_probe.py 4096 $who 2>&1 | grep -v "^==PROF==" | python3 scripts/ncu_table.py
done
